import RPCJSON

/// An error a method (or `init(context:)`) throws to choose exactly what the client sees.
///
/// Module-defined codes are positive (or any code outside -32768…-32000); the SDK itself uses the standard
/// -32602 (Invalid params) and -32603 (Internal error). Any other error thrown by a method becomes -32603
/// with no data, and its description is logged for the administrator.
public struct RPCModuleError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    /// A short sentence, e.g. "Division by zero".
    public var message: String
    /// Structured details for the client; `nil` sends no `data` member.
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// -32602 "Invalid params" with `data: {"detail": detail}`, the form rpcd uses for every rejected params.
    public static func invalidParams(_ detail: String) -> RPCModuleError {
        RPCModuleError(code: -32602, message: "Invalid params", data: ["detail": .string(detail)])
    }

    /// -32603 "Internal error" without data. Prefer throwing the underlying error: the SDK logs it.
    public static let internalError = RPCModuleError(code: -32603, message: "Internal error")

    public var description: String {
        guard let data else { return message }
        return "\(message) \(data.jsonText)"
    }
}
