public import Logging
public import NIOCore
public import NIOPosix
import RPCJSON
import RPCLogging
import RPCProtocol
import RPCWire
import Synchronization

/// A JSON-RPC 2.0 client for rpcd's framed protocol over TCP, TLS or a Unix socket.
///
/// Calls may be made concurrently from any task: they are pipelined on the client's connections and their
/// replies, which may arrive in any order, are matched by id (integers from 1, unique per client). The client
/// keeps a small pool of connections (`Configuration.connections`, default 1) to one or several endpoints,
/// reconnects after a connection breaks, and fails over to another endpoint when one stops answering; the
/// policy is `RPCConnectionPool`'s, described in docs/CLIENT.md. A call's deadline or its task's cancellation
/// ends the call at once and tells the server to cancel it (`rpc.cancel`). Across a server's restart, a call
/// the server did not run (`rpc.goingAway`, -32006) is sent again on a new connection, and so is one whose fate
/// is unknown when its options say it is `idempotent` (docs/CLIENT.md, "Restarts"). Thread-safe; `Sendable`.
public final class RPCClient: Sendable {
    /// What a client connects to and how.
    public struct Configuration: Sendable {
        /// How to reach each server, in order of preference (see the pool's policy in docs/CLIENT.md).
        public var transports: [any RPCClientTransport]
        /// For endpoints given later (`update(endpoints:)`, discovery): whom to trust for `tls://` ones.
        public var tls: RPCClientTLS
        /// How many connections to keep (calls take them in turn); at least 1.
        public var connections: Int
        /// For establishing one connection (name resolution, connect, TLS handshake).
        public var connectTimeout: Duration
        /// What a call's own options leave out (e.g. a default timeout).
        public var defaultOptions: RPCCallOptions
        /// How long a call that must be sent again (the server did not run it, or it is idempotent and its
        /// fate is unknown) keeps trying to reach a server, from its first failure and within its deadline:
        /// long enough for a restart.
        public var reconnectFor: Duration
        /// For endpoints given later: the largest reply frame accepted.
        public var maxFrameSize: Int
        public var eventLoopGroup: any EventLoopGroup
        /// Where reconnects, failovers and lost instances are logged (field names from docs/LOGGING.md).
        public var logger: Logger

        /// Servers reached over sockets (`RPCSocketTransport`): TCP, TLS or Unix.
        public init(
            endpoints: [RPCEndpoint], tls: RPCClientTLS = RPCClientTLS(), connections: Int = 1,
            connectTimeout: Duration = .seconds(10), defaultOptions: RPCCallOptions = RPCCallOptions(),
            reconnectFor: Duration = .seconds(30), maxFrameSize: Int = RPCLimits.maxFrameSize.defaultValue,
            eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
            logger: Logger = Logger(label: "rpcd.client", factory: { _ in SwiftLogNoOpLogHandler() })
        ) {
            self.init(
                transports: endpoints.map { RPCSocketTransport(endpoint: $0, tls: tls, maxFrameSize: maxFrameSize) },
                connections: connections, connectTimeout: connectTimeout, defaultOptions: defaultOptions,
                reconnectFor: reconnectFor, eventLoopGroup: eventLoopGroup, logger: logger)
            self.tls = tls
            self.maxFrameSize = maxFrameSize
        }

        /// Servers reached through any transport (an in-process router, say).
        public init(
            transports: [any RPCClientTransport], connections: Int = 1, connectTimeout: Duration = .seconds(10),
            defaultOptions: RPCCallOptions = RPCCallOptions(), reconnectFor: Duration = .seconds(30),
            eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
            logger: Logger = Logger(label: "rpcd.client", factory: { _ in SwiftLogNoOpLogHandler() })
        ) {
            self.transports = transports
            self.tls = RPCClientTLS()
            self.connections = connections
            self.connectTimeout = connectTimeout
            self.defaultOptions = defaultOptions
            self.reconnectFor = reconnectFor
            self.maxFrameSize = RPCLimits.maxFrameSize.defaultValue
            self.eventLoopGroup = eventLoopGroup
            self.logger = logger
        }
    }

    public let configuration: Configuration
    private let pool: RPCConnectionPool
    private let nextID = Atomic<Int>(1)

    /// Follows a source of endpoint lists (discovery), while the client runs (`run()`, `withRPCClient`).
    let endpointUpdates: (@Sendable (RPCClient) async -> Void)?

    /// A client that connects when it is first used (no I/O here). Errors come with the calls.
    public convenience init(configuration: Configuration) {
        self.init(configuration: configuration, followingUpdates: nil)
    }

    /// A client whose endpoints come from `updates`: each element is the complete list of instances now
    /// (`RPCServiceDiscovery.endpointLists()` turns DNS-SD events into such lists), in order of preference.
    /// `configuration.endpoints` are used until the first list arrives. The updates are followed while the
    /// client runs: as a `Service` (`run()`), or inside `withRPCClient`.
    public convenience init<Updates: AsyncSequence & Sendable>(
        configuration: Configuration, endpointUpdates updates: Updates
    ) where Updates.Element == [RPCEndpoint] {
        self.init(configuration: configuration) { client in
            do {
                for try await endpoints in updates { client.update(endpoints: endpoints) }
            } catch {
                client.configuration.logger.warning(
                    "Endpoint updates ended with an error; keeping the last endpoints",
                    metadata: [LogField.error: "\(error)"])
            }
        }
    }

    init(configuration: Configuration, followingUpdates: (@Sendable (RPCClient) async -> Void)?) {
        self.configuration = configuration
        self.endpointUpdates = followingUpdates
        let settings = configuration
        self.pool = RPCConnectionPool(
            endpoints: configuration.transports, connections: configuration.connections,
            reconnectFor: configuration.reconnectFor, logger: configuration.logger
        ) { transport throws(RPCClientError) in
            try await RPCConnection.open(
                transport, eventLoopGroup: settings.eventLoopGroup, timeout: settings.connectTimeout)
        }
    }

    /// Connects (TCP with TCP_NODELAY, TLS over that for a `tls://` endpoint, or Unix socket) and returns
    /// the client once the first connection is up. Errors name the endpoint and the reason. The client
    /// reconnects to `endpoint` by itself if the connection breaks later.
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
        let client = RPCClient(configuration: Configuration(
            endpoints: [endpoint], tls: tls, connectTimeout: timeout, maxFrameSize: maxFrameSize,
            eventLoopGroup: eventLoopGroup))
        _ = try await client.pool.connection(until: nil)
        return client
    }

    /// The first endpoint (the one `connect(to:)` was given), for a client of socket endpoints.
    public var endpoint: RPCEndpoint {
        endpoints.first ?? .tcp(host: "", port: 0)
    }

    /// The socket endpoints the client connects to now (discovery changes them).
    public var endpoints: [RPCEndpoint] {
        pool.endpoints.compactMap { ($0 as? RPCSocketTransport)?.endpoint }
    }

    /// Whether a connection is open now (the client reconnects on the next call if not).
    public var isConnected: Bool { !pool.openConnections.isEmpty }

    /// The client pipeline, head to tail: frame decoder, length prepender (u32 big-endian), client handler.
    static func channelHandlers(
        maxFrameSize: Int, notifications: RPCServerNotifications = RPCServerNotifications()
    ) -> [any ChannelHandler] {
        framingHandlers(maxFrameSize: maxFrameSize) + [RPCClientHandler(notifications: notifications)]
    }

    /// rpcd's framing in both directions: payloads in, payloads out (also what a test server needs).
    package static func framingHandlers(maxFrameSize: Int) -> [any ChannelHandler] {
        RPCSocketTransport.framingHandlers(maxFrameSize: maxFrameSize)
    }

    /// One call; `params` must be nil, an array or an object. Returns the result, or throws `.remote` with the
    /// server's error object.
    ///
    /// - Parameter timeout: how long to wait for the reply (nil: the configuration's default, else until the
    ///   connection closes). When it passes the call fails with `.timedOut` and the server cancels it.
    public func call(
        _ method: String, params: JSONValue? = nil, timeout: Duration? = nil
    ) async throws(RPCClientError) -> JSONValue {
        try await call(method, params: params, options: RPCCallOptions(timeout: timeout))
    }

    /// One call with `options` (deadline, timeout, idempotent; what they leave out comes from the
    /// configuration's `defaultOptions`). A cancelled task ends the call with `.cancelled` and cancels it in the
    /// server.
    public func call(
        _ method: String, params: JSONValue? = nil, options: RPCCallOptions
    ) async throws(RPCClientError) -> JSONValue {
        try RPCRequestEncoding.validate(params: params)
        return try await again(options) { connection, remaining throws(RPCClientError) in
            try await connection.call(method, params: params, id: reserveIDs(1), timeout: remaining)
        }
    }

    /// A notification: sent, never answered. Returns once it is written to a connection. One a leaving server
    /// did not run (it came after the cut of its `rpc.goingAway`) is sent again on another connection.
    public func notify(_ method: String, params: JSONValue? = nil) async throws(RPCClientError) {
        try RPCRequestEncoding.validate(params: params)
        // A notification that could not be written did not run: safe to send again.
        try await again(RPCCallOptions(idempotent: true)) { connection, _ throws(RPCClientError) in
            try await connection.notify(method, params: params)
        }
    }

    /// A batch; results in the order of the calls (notifications are not supported here). A batch-level error
    /// (for example *Batch too large*, -32001) is thrown as `.remote`; per-call errors are in the results. A
    /// batch the server did not run (every entry -32006) is sent again as a call is.
    public func batch(
        _ calls: [(method: String, params: JSONValue?)], timeout: Duration? = nil, idempotent: Bool = false
    ) async throws(RPCClientError) -> [Result<JSONValue, RPCClientError>] {
        guard !calls.isEmpty else { return [] }
        for call in calls { try RPCRequestEncoding.validate(params: call.params) }
        return try await again(RPCCallOptions(timeout: timeout, idempotent: idempotent)) {
            connection, remaining throws(RPCClientError) in
            let first = reserveIDs(calls.count)
            let results = try await connection.batch(calls, ids: Array(first..<first + calls.count), timeout: remaining)
            if results.allSatisfy({ $0 == .failure(RPCClientHandler.notRun) }) { throw RPCClientHandler.notRun }
            return results
        }
    }

    /// Sends one raw payload as a frame and waits for the next frame that is NOT a reply to a pending call
    /// (`RPCConnection.sendRaw`). For rpcctl and rpcd's own tests only: not part of the library's API.
    package func sendRaw(
        _ payload: [UInt8], expectReply: Bool = true, timeout: Duration = .seconds(10), framed: Bool = true
    ) async throws(RPCClientError) -> JSONValue? {
        // The connection the caller has been using: a protocol test must see it closed, not a new one.
        guard let connection = pool.openConnections.first else { throw .connectionClosed }
        return try await connection.sendRaw(payload, expectReply: expectReply, timeout: timeout, framed: framed)
    }

    /// Replaces the endpoints (what discovery found): connections to endpoints no longer listed close, and
    /// their slots move to the others.
    public func update(endpoints: [RPCEndpoint]) {
        pool.update(endpoints: endpoints.map {
            RPCSocketTransport(endpoint: $0, tls: configuration.tls, maxFrameSize: configuration.maxFrameSize)
        })
    }

    /// Replaces the transports (servers come and go): connections through transports no longer listed (by
    /// `name`) close, and their slots move to the others.
    public func update(transports: [any RPCClientTransport]) {
        pool.update(endpoints: transports)
    }

    /// Closes every connection for good; pending calls fail with `.connectionClosed`, later ones too.
    public func close() async {
        await pool.close()
    }

    // MARK: Internals

    /// Makes `attempt` on a connection for a call with `options`, which it gets with how long the call may
    /// still wait for its reply (waiting for a connection counts against the deadline); `subscribe` uses it
    /// too. Makes it again, on a new connection, while the server says the call did not run (-32006: after the
    /// cut of its `rpc.goingAway`, or refused while stopping) or, for an idempotent call, when its fate is
    /// unknown (`.connectionClosed`): from the first failure for up to `reconnectFor`, and within the deadline.
    func again<Value>(
        _ options: RPCCallOptions,
        _ attempt: (RPCConnection, Duration?) async throws(RPCClientError) -> Value
    ) async throws(RPCClientError) -> Value {
        let options = options.filled(from: configuration.defaultOptions)
        let deadline = options.deadline(from: .now)
        var retryUntil: ContinuousClock.Instant?
        while true {
            if Task.isCancelled { throw .cancelled }
            let connection = try await pool.connection(until: [deadline, retryUntil].compactMap { $0 }.min())
            var remaining: Duration?
            if let deadline {
                remaining = deadline - .now
                guard remaining! > .zero else { throw .timedOut }
            }
            do throws(RPCClientError) {
                return try await attempt(connection, remaining)
            } catch {
                let sendAgain: Bool
                switch error {
                case .remote(let remote) where remote.code == RPCError.Code.shuttingDown:
                    connection.retire()
                    sendAgain = true
                case .connectionClosed:
                    sendAgain = options.idempotent
                default:
                    sendAgain = false
                }
                let until = retryUntil ?? .now + configuration.reconnectFor
                retryUntil = until
                guard sendAgain, ContinuousClock.now < until, !pool.isClosed else { throw error }
            }
        }
    }

    /// Reserves `count` consecutive ids and returns the first.
    func reserveIDs(_ count: Int) -> Int {
        nextID.wrappingAdd(count, ordering: .relaxed).oldValue
    }
}
