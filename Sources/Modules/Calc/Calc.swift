import RPCModuleSDK

/// `calc`: arithmetic on JSON numbers (as `Double`s).
///
/// Errors of its own:
/// - 1 "Division by zero", data `{"dividend": x}`
/// - 2 "Result out of range", data `{"result": "inf"}` (or "-inf", "nan") when the result is not finite
struct Calc: RPCModule {
    static let name = "calc"
    static let version = "1.0.0"
    static let summary = "Adds, subtracts, multiplies and divides numbers."

    init(context: RPCModuleContext) {}

    struct Pair: Decodable {
        let a: Double
        let b: Double
    }

    struct Difference: Decodable {
        let minuend: Double
        let subtrahend: Double
    }

    struct Quotient: Decodable {
        let dividend: Double
        let divisor: Double
    }

    static var methods: [RPCModuleMethod<Calc>] {
        [
            .method(
                "add", summary: "Returns a + b.", params: [.number("a"), .number("b")], result: .number("sum"),
                readOnly: true
            ) { (_, p: Pair) in
                try finite(p.a + p.b)
            },
            .method(
                "subtract", summary: "Returns minuend - subtrahend.",
                params: [.number("minuend"), .number("subtrahend")], result: .number("difference"), readOnly: true
            ) { (_, p: Difference) in
                try finite(p.minuend - p.subtrahend)
            },
            .method(
                "multiply", summary: "Returns a * b.", params: [.number("a"), .number("b")],
                result: .number("product"), readOnly: true
            ) { (_, p: Pair) in
                try finite(p.a * p.b)
            },
            .method(
                "divide", summary: "Returns dividend / divisor; error 1 when divisor is 0.",
                params: [.number("dividend"), .number("divisor")], result: .number("quotient"), readOnly: true
            ) { (_, p: Quotient) in
                guard p.divisor != 0 else {
                    throw RPCError(code: 1, message: "Division by zero", data: ["dividend": .number(p.dividend)])
                }
                return try finite(p.dividend / p.divisor)
            },
            .raw(
                "sum", summary: "Returns the sum of any count of numbers given by position (0 for none).",
                result: .number("sum"), readOnly: true
            ) { _, params in
                let numbers: [JSONValue]
                switch params {
                case .null: numbers = []
                case .array(let elements): numbers = elements
                default: throw RPCError.invalidParams("calc.sum takes its numbers by position")
                }
                var total = 0.0
                for (position, element) in numbers.enumerated() {
                    guard let value = element.doubleValue else {
                        throw RPCError.invalidParams("params[\(position)] is not a number")
                    }
                    total += value
                }
                return .number(try finite(total))
            },
        ]
    }

    /// Rejects infinities and NaN, which JSON cannot carry.
    static func finite(_ value: Double) throws -> Double {
        guard value.isFinite else {
            throw RPCError(
                code: 2, message: "Result out of range", data: ["result": .string(value.isNaN ? "nan" : value > 0 ? "inf" : "-inf")])
        }
        return value
    }
}

@_cdecl("rpcd_module_entry_v1")
public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(Calc.self) }
