/// An error a service documents: a fixed code and message, and data whose JSON form is this type's.
///
/// Declare each documented error as a type of its own, its stored properties being the error's data, and list
/// it on the methods that throw it (`@RPCMethod(errors: [DivisionByZero.self])`):
///
/// ```swift
/// struct DivisionByZero: RPCDocumentedError {
///     static let code = 1
///     static let message = "Division by zero"
///     var dividend: Double
/// }
/// ```
///
/// A module throws it like any error (it is `RPCErrorConvertible`, so it reaches the client as
/// `{"code": 1, "message": "Division by zero", "data": {"dividend": 10}}`); a proxy whose method declares it
/// throws it back as this type, its data decoded. `rpc.discover` lists each method's documented errors.
public protocol RPCDocumentedError: RPCErrorConvertible, Codable, Sendable {
    /// A positive code, or one outside -32768…-32000 (those are JSON-RPC's and rpcd's).
    static var code: Int { get }
    static var message: String { get }
}

extension RPCDocumentedError {
    public var code: Int { Self.code }
    public var message: String { Self.message }

    /// The error object: the data is this value's JSON form, left out when that is an empty object.
    public var rpcError: RPCError {
        let data = try? RPCValueEncoding.value(self)
        return RPCError(code: Self.code, message: Self.message, data: data == [:] ? nil : data)
    }

    /// The code and message, as a method descriptor lists them.
    public static var documentation: RPCError { RPCError(code: code, message: message) }

    /// `error` as this type, when its code is this type's and its data decodes (absent data decodes as `{}`).
    public static func decoding(_ error: RPCError) -> Self? {
        guard error.code == code else { return nil }
        return try? JSONValueDecoder().decode(Self.self, from: error.data ?? [:])
    }
}
