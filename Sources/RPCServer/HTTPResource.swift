package import NIOCore
package import NIOHTTP1
package import RPCCore

/// Something served at a `GET` path of every HTTP listener besides JSON-RPC: the web console at `/`,
/// Prometheus' `/metrics`. Registered in `RPCServer.Configuration.httpResources`; `HTTPRequestHandler` finds
/// it by path (the query string is ignored), refuses the caller the access rules would refuse `method`, and
/// writes what `respond` returns, charged to the peer until the socket takes it.
///
/// The access check is the one of a call: `GET /metrics` registered with `method: "rpcd.metrics"` is answered
/// to the peers that may call `rpcd.metrics` (a read-only method: `Allow=` or `AllowRead=` of its service),
/// whether or not such a method exists. Refused peers get 403 with the JSON-RPC error in the body, as a call
/// would.
///
/// A resource that needs its own status and headers (the console's ETag and 304, its Content-Security-Policy)
/// answers a whole `Response`, from the request's headers.
///
///     HTTPResource(path: "/metrics", method: "rpcd.metrics", contentType: "text/plain; version=0.0.4") { request in
///         request.eventLoop.makeSucceededFuture(ByteBuffer(string: exposition()))
///     }
package struct HTTPResource: Sendable {
    /// What a responder gets.
    package struct Request: Sendable {
        /// The full target, query included (`/metrics?name=x`).
        package var uri: String
        package var peer: RPCPeer
        /// The connection's loop; the returned future may complete on any.
        package var eventLoop: any EventLoop
        /// The request's headers (`Host:` already checked by `HTTPRequestPolicy`).
        package var headers: HTTPHeaders = [:]
    }

    /// What a responder answers: the status (200, 304, ...), the headers (`Content-Type:` among them) and the
    /// body. `Content-Length:` and the connection's headers are the handler's.
    package struct Response: Sendable {
        package var status: HTTPResponseStatus
        package var headers: HTTPHeaders
        package var body: ByteBuffer

        package init(status: HTTPResponseStatus = .ok, headers: HTTPHeaders, body: ByteBuffer) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// The absolute path, without query: `/`, `/metrics`.
    package var path: String
    /// The method whose access rule decides who may `GET` it, as `service.method`.
    package var method: String
    package var respond: @Sendable (Request) -> EventLoopFuture<Response>

    /// A resource answered 200 with `contentType` and the body `respond` makes.
    package init(
        path: String, method: String, contentType: String, respond: @escaping @Sendable (Request) -> EventLoopFuture<ByteBuffer>
    ) {
        self.init(path: path, method: method) { request in
            respond(request).map { Response(headers: ["content-type": contentType], body: $0) }
        }
    }

    /// A resource that makes its whole answer.
    package init(path: String, method: String, respond: @escaping @Sendable (Request) -> EventLoopFuture<Response>) {
        precondition(path.hasPrefix("/"), "an HTTP resource's path is absolute")
        self.path = path
        self.method = method
        self.respond = respond
    }

    /// Whether `peer` may `GET` it under `registry`'s access rules: as a call of `method` if the registry has
    /// it, else as a read-only method of its service.
    func allows(_ peer: RPCPeer, registry: RPCServiceRegistry) -> Bool {
        if let route = registry.route(for: method) {
            return registry.access.allows(peer, service: route.serviceName, method: route.method)
        }
        let service = method.lastIndex(of: ".").map { String(method[..<$0]) } ?? method
        return registry.access.allowsSubscribing(peer, service: service)
    }
}
