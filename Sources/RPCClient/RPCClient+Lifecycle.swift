public import ServiceLifecycle

/// A long-lived client is a `Service` in the application's `ServiceGroup`; a short-lived one is scoped with
/// `withRPCClient`. Either way the client follows its endpoint updates (discovery) while it runs, and is
/// closed when it ends.
extension RPCClient: Service {
    /// Runs until graceful shutdown (or cancellation): follows the endpoint updates, if the client has any;
    /// then closes every connection. Calls may be made from other tasks meanwhile.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            if let endpointUpdates { group.addTask { await endpointUpdates(self) } }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        await close()
    }
}

/// Runs `body` with a client made from `configuration`, following `endpointUpdates` meanwhile if given,
/// and closes the client when `body` returns or throws.
///
///     let sum = try await withRPCClient(.init(endpoints: [.tcp(host: "127.0.0.1", port: 7545)])) { client in
///         try await client.call("calc.add", params: [1, 2])
///     }
public func withRPCClient<Result: Sendable>(
    _ configuration: RPCClient.Configuration, _ body: (RPCClient) async throws -> Result
) async throws -> Result {
    try await withRPCClient(RPCClient(configuration: configuration), body)
}

/// `withRPCClient` for a client made otherwise (with endpoint updates, say).
public func withRPCClient<Result: Sendable>(
    _ client: RPCClient, _ body: (RPCClient) async throws -> Result
) async throws -> Result {
    let follower = client.endpointUpdates.map { updates in Task { await updates(client) } }
    defer { follower?.cancel() }
    do {
        let result = try await body(client)
        await client.close()
        return result
    } catch {
        await client.close()
        throw error
    }
}
