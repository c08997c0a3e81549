import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL
import RPCJSON
import RPCProtocol
import RPCTLS
import RPCWire
import Synchronization

/// A JSON-RPC 2.0 client for rpcd's framed protocol over TCP, TLS or a Unix socket.
///
/// One client is one connection. Calls may be made concurrently from any task: they are pipelined on the
/// connection and their replies, which may arrive in any order, are matched by id. Ids are integers from 1.
public final class RPCClient: Sendable {
    /// Where this client is connected.
    public let endpoint: RPCEndpoint
    let channel: any Channel
    private let nextID = Atomic<Int>(1)
    /// The server's notifications on this connection (events), routed by `RPCClientHandler`.
    package let notifications: RPCServerNotifications
    /// This connection's subscriptions, by id (`subscribe`).
    let subscriptions = RPCClientSubscriptions()

    init(channel: any Channel, endpoint: RPCEndpoint, notifications: RPCServerNotifications) {
        self.channel = channel
        self.endpoint = endpoint
        self.notifications = notifications
    }

    /// Connects (TCP with TCP_NODELAY, TLS over that for a `tls://` endpoint, or Unix socket). Errors name
    /// the endpoint and the reason.
    ///
    /// - Parameters:
    ///   - tls: whom to trust and what to present for a `tls://` endpoint (default: the system's CAs, no client
    ///     certificate); ignored for the others.
    ///   - maxFrameSize: the largest reply frame accepted; a larger one fails every pending call and closes.
    ///   - timeout: for establishing the connection (including name resolution), and then for the TLS handshake.
    ///     A server certificate the client does not trust is a `.connectFailed` that says why.
    public static func connect(
        to endpoint: RPCEndpoint, tls: RPCClientTLS = RPCClientTLS(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        maxFrameSize: Int = RPCLimits.maxFrameSize.defaultValue, timeout: Duration = .seconds(10)
    ) async throws(RPCClientError) -> RPCClient {
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
        let loop = eventLoopGroup.next()
        let handshake = tlsHandler.map { _ in loop.makePromise(of: Void.self) }
        let notifications = RPCServerNotifications()
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(TimeAmount(timeout))
            .channelInitializer { [tlsHandler] channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tlsHandler {
                        try channel.pipeline.syncOperations.addHandlers(
                            tlsHandler(), TLSHandshakeWaiter(completing: handshake!, timeout: TimeAmount(timeout)))
                    }
                    try channel.pipeline.syncOperations.addHandlers(
                        channelHandlers(maxFrameSize: maxFrameSize, notifications: notifications))
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
            }
            try await handshake?.futureResult.get()
            return RPCClient(channel: channel, endpoint: endpoint, notifications: notifications)
        } catch {
            // A connection that failed before its channel was made never runs the waiter.
            handshake?.fail(error)
            throw .connectFailed(endpoint: endpoint.description, reason: ConnectFailure.reason(for: error))
        }
    }

    /// The client pipeline, head to tail: frame decoder, length prepender (u32 big-endian), client handler.
    static func channelHandlers(
        maxFrameSize: Int, notifications: RPCServerNotifications = RPCServerNotifications()
    ) -> [any ChannelHandler] {
        framingHandlers(maxFrameSize: maxFrameSize) + [RPCClientHandler(notifications: notifications)]
    }

    /// rpcd's framing in both directions: payloads in, payloads out (also what a test server needs).
    package static func framingHandlers(maxFrameSize: Int) -> [any ChannelHandler] {
        [
            ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: maxFrameSize)),
            LengthFieldPrepender(lengthFieldBitLength: .thirtyTwoBits, lengthFieldEndianness: .big),
        ]
    }

    /// Whether the connection is still open.
    public var isConnected: Bool { channel.isActive }

    /// One call; `params` must be nil, an array or an object. Returns the result, or throws `.remote` with the
    /// server's error object.
    ///
    /// - Parameter timeout: how long to wait for the reply (nil: until the connection closes). A reply that
    ///   arrives later is dropped.
    public func call(
        _ method: String, params: JSONValue? = nil, timeout: Duration? = nil
    ) async throws(RPCClientError) -> JSONValue {
        try RPCRequestEncoding.validate(params: params)
        let id = reserveIDs(1)
        let payload = channel.allocator.buffer(bytes: RPCRequestEncoding.request(method: method, params: params, id: id))
        let promise = channel.eventLoop.makePromise(of: JSONValue.self)
        send(.call(id: id, payload: payload, promise: promise, timeout: timeout.map(TimeAmount.init)), failing: promise)
        return try await Self.result(of: promise.futureResult)
    }

    /// A notification: sent, never answered. Returns once it is written to the connection.
    public func notify(_ method: String, params: JSONValue? = nil) async throws(RPCClientError) {
        try RPCRequestEncoding.validate(params: params)
        let payload = channel.allocator.buffer(bytes: RPCRequestEncoding.notification(method: method, params: params))
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(RPCClientCommand.notify(payload: payload), promise: written)
        do {
            try await written.futureResult.get()
        } catch {
            throw .connectionClosed
        }
    }

    /// A batch; results in the order of the calls (notifications are not supported here). A batch-level error
    /// (for example *Batch too large*, -32001) is thrown as `.remote`; per-call errors are in the results.
    public func batch(
        _ calls: [(method: String, params: JSONValue?)], timeout: Duration? = nil
    ) async throws(RPCClientError) -> [Result<JSONValue, RPCClientError>] {
        guard !calls.isEmpty else { return [] }
        for call in calls { try RPCRequestEncoding.validate(params: call.params) }
        let first = reserveIDs(calls.count)
        let ids = Array(first..<first + calls.count)
        let payload = channel.allocator.buffer(bytes: RPCRequestEncoding.batch(calls, ids: ids))
        let promise = channel.eventLoop.makePromise(of: [Result<JSONValue, RPCClientError>].self)
        send(.batch(ids: ids, payload: payload, promise: promise, timeout: timeout.map(TimeAmount.init)), failing: promise)
        return try await Self.result(of: promise.futureResult)
    }

    /// Sends one raw payload as a frame and waits for the next frame that is NOT a reply to a pending call
    /// (for protocol tests: invalid JSON, hostile input); nil if the server closes first, or at once when
    /// `expectReply` is false. Only meaningful while no other calls are pending. A reply that is not JSON
    /// throws `.protocolViolation`; none within `timeout` throws `.timedOut`; a connection that was already
    /// closed throws `.connectionClosed`. For rpcctl and rpcd's own tests only: not part of the library's API.
    ///
    /// - Parameter framed: false sends `payload` without a length prefix, so a test can write its own
    ///   (an oversized announced length, a frame split across writes, a truncated frame).
    package func sendRaw(
        _ payload: [UInt8], expectReply: Bool = true, timeout: Duration = .seconds(10), framed: Bool = true
    ) async throws(RPCClientError) -> JSONValue? {
        let buffer = channel.allocator.buffer(bytes: payload)
        let promise = channel.eventLoop.makePromise(of: JSONValue?.self)
        send(
            .raw(payload: buffer, framed: framed, expectReply: expectReply, promise: promise, timeout: TimeAmount(timeout)),
            failing: promise)
        return try await Self.result(of: promise.futureResult)
    }

    /// Closes the connection; pending calls fail with `.connectionClosed`.
    public func close() async {
        try? await channel.close()
    }

    // MARK: Internals

    /// Reserves `count` consecutive ids and returns the first.
    func reserveIDs(_ count: Int) -> Int {
        nextID.wrappingAdd(count, ordering: .relaxed).oldValue
    }

    /// Writes `command`; if the write fails (the channel is closed), `promise` fails with `.connectionClosed`.
    func send<Value>(_ command: RPCClientCommand, failing promise: EventLoopPromise<Value>) {
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in promise.fail(RPCClientError.connectionClosed) }
        channel.writeAndFlush(command, promise: written)
    }

    static func result<Value: Sendable>(of future: EventLoopFuture<Value>) async throws(RPCClientError) -> Value {
        do {
            return try await future.get()
        } catch let error as RPCClientError {
            throw error
        } catch {
            throw .connectionClosed
        }
    }
}
