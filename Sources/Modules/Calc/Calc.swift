import RPCExampleInterfaces
import RPCModuleSDK

/// `calc`: arithmetic on JSON numbers (as `Double`s). Its interface, `Calculator`, is declared once
/// (Sources/Modules/Interfaces) for this module and its clients; the errors of its own are documented there:
/// 1 `DivisionByZero`, 2 `ResultOutOfRange` (data `{"result": "inf"}`, "-inf" or "nan", when a result is not
/// finite).
struct Calc: SyncCalculator, RPCInterfaceModule {
    static let version = "1.0.0"

    init(context: RPCModuleContext) {}

    func add(a: Double, b: Double) throws -> Double {
        try Self.finite(a + b)
    }

    func subtract(minuend: Double, subtrahend: Double) throws -> Double {
        try Self.finite(minuend - subtrahend)
    }

    func multiply(a: Double, b: Double) throws -> Double {
        try Self.finite(a * b)
    }

    func divide(dividend: Double, divisor: Double) throws -> Double {
        guard divisor != 0 else { throw DivisionByZero(dividend: dividend) }
        return try Self.finite(dividend / divisor)
    }

    func sum(_ numbers: [Double]) throws -> Double {
        try Self.finite(numbers.reduce(0, +))
    }

    /// Rejects infinities and NaN, which JSON cannot carry.
    static func finite(_ value: Double) throws -> Double {
        guard value.isFinite else { throw ResultOutOfRange(result: value.isNaN ? "nan" : value > 0 ? "inf" : "-inf") }
        return value
    }
}

@_cdecl("rpcd_module_entry_v1")
public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(Calc.self) }
