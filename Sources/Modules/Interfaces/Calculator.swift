public import RPCMacros

/// Adds, subtracts, multiplies and divides numbers.
///
/// The interface of the example module `calc` (Sources/Modules/Calc), declared once for the module and its
/// clients: numbers are JSON numbers, as `Double`s.
@RPCInterface(service: "calc")
public protocol Calculator: Sendable {
    /// Returns a + b.
    @RPCMethod(result: "sum", readOnly: true, errors: [ResultOutOfRange.self])
    func add(a: Double, b: Double) async throws -> Double

    /// Returns minuend - subtrahend.
    @RPCMethod(result: "difference", readOnly: true, errors: [ResultOutOfRange.self])
    func subtract(minuend: Double, subtrahend: Double) async throws -> Double

    /// Returns a * b.
    @RPCMethod(result: "product", readOnly: true, errors: [ResultOutOfRange.self])
    func multiply(a: Double, b: Double) async throws -> Double

    /// Returns dividend / divisor; error 1 when divisor is 0.
    @RPCMethod(result: "quotient", readOnly: true, errors: [DivisionByZero.self, ResultOutOfRange.self])
    func divide(dividend: Double, divisor: Double) async throws -> Double

    /// Returns the sum of any count of numbers given by position (0 for none).
    @RPCMethod(result: "sum", readOnly: true, errors: [ResultOutOfRange.self], paramsList: true)
    func sum(_ numbers: [Double]) async throws -> Double
}

/// calc's error 1: `divide` by 0.
public struct DivisionByZero: RPCDocumentedError, Hashable {
    public static let code = 1
    public static let message = "Division by zero"
    public var dividend: Double

    public init(dividend: Double) {
        self.dividend = dividend
    }
}

/// calc's error 2: a result JSON cannot carry; `result` is "inf", "-inf" or "nan".
public struct ResultOutOfRange: RPCDocumentedError, Hashable {
    public static let code = 2
    public static let message = "Result out of range"
    public var result: String

    public init(result: String) {
        self.result = result
    }
}
