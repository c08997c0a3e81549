/// What a proxy calls through: one JSON-RPC call by method name. `RPCClient` is one (its `call`); an app can
/// put anything that speaks rpcd's protocol behind it.
///
/// Called from any task, concurrently.
public protocol RPCProxyTransport: Sendable {
    /// Calls `method` (the full name, `calc.add`) with `params` (an object of named params, or an array for
    /// a method that takes a list) and returns the result. The server's error object must be thrown as the
    /// `RPCError` it holds; any other failure (connection, timeout) as the transport's own error.
    func callForProxy(_ method: String, params: JSONValue) async throws -> JSONValue

    /// The same, for a method the interface declares `readOnly` when `readOnly` is true: safe to run twice, so
    /// a transport may send it again when it cannot tell whether it ran (a connection that ended before the
    /// reply). By default, the call above.
    func callForProxy(_ method: String, params: JSONValue, readOnly: Bool) async throws -> JSONValue
}

extension RPCProxyTransport {
    public func callForProxy(_ method: String, params: JSONValue, readOnly: Bool) async throws -> JSONValue {
        try await callForProxy(method, params: params)
    }
}
