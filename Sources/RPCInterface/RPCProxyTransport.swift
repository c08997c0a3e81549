/// What a proxy calls through: one JSON-RPC call by method name. `RPCClient` is one (its `call`); an app can
/// put anything that speaks rpcd's protocol behind it.
///
/// Called from any task, concurrently.
public protocol RPCProxyTransport: Sendable {
    /// Calls `method` (the full name, `calc.add`) with `params` (an object of named params, or an array for
    /// a method that takes a list) and returns the result. The server's error object must be thrown as the
    /// `RPCError` it holds; any other failure (connection, timeout) as the transport's own error.
    func callForProxy(_ method: String, params: JSONValue) async throws -> JSONValue
}
