import RPCInterface

extension RPCClient: RPCProxyTransport {
    /// One call for a proxy: the server's error object is thrown as the `RPCError` it holds (the proxy turns
    /// documented ones into their types), any other failure as the `RPCClientError` it is.
    public func callForProxy(_ method: String, params: JSONValue) async throws -> JSONValue {
        try await callForProxy(method, params: params, readOnly: false)
    }

    /// A proxy's call of a method its interface declares `readOnly` is `idempotent` (`RPCCallOptions`): sent
    /// again when its connection ends before the reply.
    public func callForProxy(_ method: String, params: JSONValue, readOnly: Bool) async throws -> JSONValue {
        do {
            // No params is `nil` here (JSONValue is nil-literal convertible: a bare `nil` would send `null`).
            let sent: JSONValue? = params == .null ? Optional.none : params
            return try await call(method, params: sent, options: RPCCallOptions(idempotent: readOnly))
        } catch .remote(let error) {
            throw error
        }
    }

    /// A proxy for an interface declared with `@RPCInterface`, calling through this client:
    /// `let calc = try await client.proxy(CalculatorProxy.self)`, then `try await calc.add(a: 1, b: 2)`.
    ///
    /// Before returning, it compares the fingerprint the proxy was compiled with against the server's for
    /// `service` (from `rpc.discover`) and throws `RPCProxyError.fingerprintMismatch`, naming both, when they
    /// differ; `fingerprintCheck: .skipped` calls across interface versions on purpose.
    ///
    /// - Parameter service: the service name the server serves the interface under (default: the declared one;
    ///   a handler file can rename it with `Service=`).
    public func proxy<Proxy: RPCProxy>(
        _ type: Proxy.Type, service: String? = nil, fingerprintCheck: RPCFingerprintCheck = .required
    ) async throws -> Proxy {
        try await Proxy.connect(self, service: service, fingerprintCheck: fingerprintCheck)
    }
}
