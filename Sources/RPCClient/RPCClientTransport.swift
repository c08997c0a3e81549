public import NIOCore
import NIOPosix
import NIOSSL
import RPCProtocol
import RPCTLS
import RPCWire

/// How a client reaches a server: it opens one connection at a time, on an event loop the client chooses,
/// whose pipeline ends in the client's own handlers. Those read and write whole frames (`ByteBuffer`
/// payloads of JSON-RPC messages); the transport puts in front of them whatever its medium needs: framing and
/// TLS over a socket (`RPCSocketTransport`), nothing for a router in the same process
/// (`RPCInProcessTransport`, product `RPCClientInProcess`), so that tests need no process and no port.
/// Errors are `.connectFailed` naming `name`.
public protocol RPCClientTransport: Sendable {
    /// Where it leads, for errors and logs; two transports with the same name lead to the same server (the
    /// client's pool tells endpoints apart by it).
    var name: String { get }

    /// Opens a connection on `loop`, its pipeline ending in `clientHandlers()` (called on `loop`, once).
    func connect(
        on loop: any EventLoop, timeout: Duration, clientHandlers: @escaping @Sendable () -> [any ChannelHandler]
    ) async throws(RPCClientError) -> any Channel
}

/// rpcd's framed protocol over TCP (with TCP_NODELAY), TLS over TCP for a `tls://` endpoint, or a Unix socket.
public struct RPCSocketTransport: RPCClientTransport {
    public let endpoint: RPCEndpoint
    /// Whom to trust and what to present for a `tls://` endpoint; ignored for the others.
    public let tls: RPCClientTLS
    /// The largest reply frame accepted; a larger one fails the connection's pending calls and closes it.
    public let maxFrameSize: Int

    public init(endpoint: RPCEndpoint, tls: RPCClientTLS = RPCClientTLS(), maxFrameSize: Int = RPCLimits.maxFrameSize.defaultValue) {
        self.endpoint = endpoint
        self.tls = tls
        self.maxFrameSize = maxFrameSize
    }

    public var name: String { endpoint.description }

    /// Connects (TCP with TCP_NODELAY, TLS over that for a `tls://` endpoint, or Unix socket). Errors name
    /// the endpoint and the reason. `timeout` is for establishing the connection (including name resolution),
    /// and then for the TLS handshake; a server certificate the client does not trust is a `.connectFailed`
    /// that says why.
    public func connect(
        on loop: any EventLoop, timeout: Duration,
        clientHandlers: @escaping @Sendable () -> [any ChannelHandler]
    ) async throws(RPCClientError) -> any Channel {
        let maxFrameSize = self.maxFrameSize
        guard !endpoint.isHTTP else {
            throw .connectFailed(
                endpoint: endpoint.description,
                reason: "this client speaks rpcd's framed protocol; an http:// listener is for HTTP clients (curl, browsers): use a framed address")
        }
        var tlsHandler: (@Sendable () throws -> NIOSSLClientHandler)?
        if case .tls(let host, _) = endpoint {
            let context: NIOSSLContext
            do {
                context = try tls.files.makeContext()
            } catch {
                throw .connectFailed(endpoint: endpoint.description, reason: "TLS: \(error)")
            }
            let serverName = tls.serverName
            tlsHandler = { try NIOSSLClientHandler.forHost(host, serverName: serverName, context: context) }
        }
        // The handshake's outcome is a promise of the loop the connection will be on, made before connecting so
        // that it cannot complete unobserved.
        let handshake = tlsHandler.map { _ in loop.makePromise(of: Void.self) }
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(TimeAmount(timeout))
            .channelInitializer { [tlsHandler] channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tlsHandler {
                        try channel.pipeline.syncOperations.addHandlers(
                            tlsHandler(), TLSHandshakeWaiter(completing: handshake!, timeout: TimeAmount(timeout)))
                    }
                    try channel.pipeline.syncOperations.addHandlers(
                        Self.framingHandlers(maxFrameSize: maxFrameSize) + clientHandlers())
                }
            }
        do {
            let channel: any Channel
            switch endpoint {
            case .tcp(let host, let port), .tls(let host, let port):
                channel = try await bootstrap.channelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .connect(host: host, port: port).get()
            case .unix(let path):
                channel = try await bootstrap.connect(unixDomainSocketPath: path).get()
            case .http, .https, .httpUnix:
                preconditionFailure("refused above")
            }
            try await handshake?.futureResult.get()
            return channel
        } catch {
            // A connection that failed before its channel was made never runs the waiter.
            handshake?.fail(error)
            throw .connectFailed(endpoint: endpoint.description, reason: ConnectFailure.reason(for: error))
        }
    }

    /// rpcd's framing in both directions: payloads in, payloads out (also what a test server needs). The same
    /// code as rpcd's own: RPCWire's decoder reads the wire format as `FrameReceiver` does, and its encoder
    /// writes a frame as the connection handler does (`LengthPrefixedFrameEncoder.write(_:framedTo:promise:)`).
    package static func framingHandlers(maxFrameSize: Int) -> [any ChannelHandler] {
        [ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: maxFrameSize)), LengthPrefixedFrameEncoder()]
    }
}
