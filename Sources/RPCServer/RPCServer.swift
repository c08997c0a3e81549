#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
package import Logging
package import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL
package import RPCCore
import RPCMetrics
import RPCLogging
package import RPCProtocol
package import RPCTLS
import RPCWire
import ServiceLifecycle
import Synchronization

/// The listening half of rpcd: binds every configured endpoint and serves connections through a router.
///
/// As a `Service` it binds on `run()`, serves until graceful shutdown is requested, then stops accepting,
/// lets every connection finish the calls it has in flight (up to `shutdownGracePeriod`), and closes.
/// `start()` can be called first to learn the bound addresses (port 0 binds an ephemeral port).
/// Thread-safe. Binding failures throw `RPCServerError`, naming the address and the reason.
package final class RPCServer: Service, Sendable {
    package struct Configuration: Sendable {
        package var listen: [RPCEndpoint]
        /// What peers are allowed (`[Server]`'s limits), whole.
        package var limits: ConnectionLimits
        /// How long shutdown waits for in-flight calls before closing connections anyway.
        package var shutdownGracePeriod: Duration
        /// The TLS context of `tls://` and `https://` listeners; required when there is one.
        package var tls: TLSServerContext?
        /// `[HTTP]`: what web pages may do with the HTTP listeners.
        package var http: HTTPSettings
        /// What HTTP listeners serve at `GET` paths besides JSON-RPC (the console, `/metrics`).
        package var httpResources: [HTTPResource] = []
        /// Listening stream sockets opened by someone else (systemd's socket activation), served as they are:
        /// nothing is bound for them, and the server owns and closes them.
        package var boundSockets: [Int32]
        /// Listening sockets an earlier run bound for `Listen=` and had kept while it restarted (systemd's file
        /// descriptor store): each serves the `Listen=` entry bound to its address, with that entry's scheme,
        /// instead of a socket bound anew, so the address never stops listening. The server owns them; one no
        /// entry names is closed (and reported to `keepSockets`).
        package var keptSockets: [Int32] = []
        /// Told first the kept sockets no entry names (closed already, their numbers as given), before anything is
        /// bound, then, once every listener is bound and before the first connection is served, the sockets
        /// serving `Listen=` entries (bound by this run, or kept), with descriptors valid until the server closes
        /// them. The daemon forgets the former and keeps the latter for its next run (`ListenerStore`).
        package var keepSockets: (@Sendable (_ serving: [(endpoint: RPCEndpoint, descriptor: Int32)], _ unused: [Int32]) -> Void)?

        package init(
            listen: [RPCEndpoint], boundSockets: [Int32] = [], tls: TLSServerContext? = nil,
            limits: ConnectionLimits = ConnectionLimits(), http: HTTPSettings = HTTPSettings(),
            shutdownGracePeriod: Duration = RPCLimits.shutdownGracePeriod.defaultValue
        ) {
            self.listen = listen
            self.boundSockets = boundSockets
            self.tls = tls
            self.limits = limits
            self.http = http
            self.shutdownGracePeriod = shutdownGracePeriod
        }
    }

    package let configuration: Configuration
    package let router: RPCRouter
    package let state: RPCServerState
    let group: any EventLoopGroup
    private let logger: Logger
    private let whenListening: @Sendable ([RPCEndpoint]) throws -> Void
    private let listeners = Mutex<[Listener]?>(nil)
    private let nextConnectionID = Atomic<UInt64>(1)
    /// Created by `run()`, completed once shutdown has closed every listener and connection. Made lazily
    /// because NIO treats a promise that is never completed as a leak.
    private let stopped = Mutex<EventLoopPromise<Void>?>(nil)

    struct Listener: Sendable {
        let endpoint: RPCEndpoint
        let channel: any Channel
        let quiescing: ServerQuiescingHelper
        /// The listening socket's descriptor, for a listener serving a `Listen=` entry (bound here, or kept);
        /// nil for a socket systemd passed, which its socket unit keeps.
        var ownSocket: Int32? = nil
    }

    /// `whenListening` runs once `run()` has bound every listener, before the first connection is served
    /// (the daemon says READY=1 there); what it throws ends `run()` with that error.
    package init(
        configuration: Configuration, router: RPCRouter, state: RPCServerState, group: any EventLoopGroup,
        logger: Logger, whenListening: @escaping @Sendable ([RPCEndpoint]) throws -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.router = router
        self.state = state
        self.group = group
        self.logger = logger
        self.whenListening = whenListening
        self.httpPolicy = HTTPRequestPolicy(settings: configuration.http)
        self.ledger = PeerLedger(
            limits: configuration.limits, administrators: RPCPeerSet(configuration.limits.administrators),
            statistics: router.statistics)
    }

    /// Binds every endpoint and adopts every bound socket; returns them as bound (ephemeral ports
    /// resolved). Idempotent.
    @discardableResult
    package func start() async throws -> [RPCEndpoint] {
        if let bound = listeners.withLock({ $0 }) { return bound.map(\.endpoint) }
        var bound: [Listener] = []
        do {
            for descriptor in configuration.boundSockets {
                bound.append(try await adopt(descriptor))
            }
            let plan = try Self.plan(listen: configuration.listen, adopted: bound.map(\.endpoint))
            for endpoint in plan.covered {
                logger.notice("Listen= address served by another listener", metadata: [LogField.listener: "\(endpoint)"])
            }
            var kept = try configuration.keptSockets.map { (descriptor: $0, endpoint: try Self.localEndpoint(of: $0)) }
            let reused: [Int32?] = plan.bind.map { endpoint in
                guard let index = kept.firstIndex(where: { Self.sameAddress($0.endpoint, endpoint) && Self.isReachable($0.endpoint) })
                else { return nil }
                return kept.remove(at: index).descriptor
            }
            // What rpcd.conf no longer names goes before anything is bound: it may hold the port a new address
            // needs (127.0.0.1:7390 kept, 0.0.0.0:7390 now wanted). systemd closes its copies when it reads the
            // removal, so a bind may find the port busy for a moment: `bind(_:whileReleasing:)` waits for it.
            for socket in kept { close(socket.descriptor) }
            if !kept.isEmpty { configuration.keepSockets?([], kept.map(\.descriptor)) }
            for (endpoint, descriptor) in zip(plan.bind, reused) {
                if let descriptor {
                    bound.append(try await adopt(descriptor, as: endpoint))
                } else {
                    bound.append(try await bind(endpoint, whileReleasing: !kept.isEmpty))
                }
            }
            configuration.keepSockets?(bound.compactMap { listener in listener.ownSocket.map { (listener.endpoint, $0) } }, [])
        } catch {
            for listener in bound { try? await listener.channel.close() }
            throw error
        }
        listeners.withLock { $0 = bound }
        state.setListeners(bound.map(\.endpoint))
        state.setLimits(maxFrameSize: configuration.limits.maxFrameSize, maxCallsPerConnection: configuration.limits.maxCallsPerConnection)
        for listener in bound {
            try await listener.channel.setOption(.autoRead, value: true).get()
            logger.notice("Listening", metadata: [LogField.listener: "\(listener.endpoint)"])
        }
        return bound.map(\.endpoint)
    }

    package func run() async throws {
        let stopped = group.next().makePromise(of: Void.self)
        self.stopped.withLock { $0 = stopped }
        do {
            try whenListening(try await start())
        } catch {
            stopped.succeed()
            for listener in listeners.withLock({ $0 }) ?? [] { try? await listener.channel.close() }
            listeners.withLock { $0 = nil }
            throw error
        }
        await withGracefulShutdownHandler {
            try? await stopped.futureResult.get()
        } onGracefulShutdown: {
            self.initiateShutdown()
        }
        // Release the listeners now, while the event loops run: a ServerQuiescingHelper's deinit touches its
        // loop, and this server may outlive the group (it is freed whenever the service group lets go of it).
        listeners.withLock { $0 = nil }
    }

    /// Stops accepting, asks every connection to close once its calls are answered, and force-closes whatever
    /// is still open after the grace period.
    package func initiateShutdown() {
        let stopped = self.stopped.withLock { $0 }
        guard let bound = listeners.withLock({ $0 }) else {
            stopped?.succeed()
            return
        }
        logger.notice(
            "Stopping: no new connections; finishing calls in flight",
            metadata: [LogField.messageID: "\(LogMessageID.stopping)"])
        let loop = group.next()
        let everyListenerDone = bound.map { listener in
            let done = loop.makePromise(of: Void.self)
            listener.quiescing.initiateShutdown(promise: done)
            return done.futureResult
        }
        let deadline = loop.scheduleTask(in: TimeAmount(configuration.shutdownGracePeriod)) {
            self.logger.warning("Grace period over; closing connections with calls still in flight")
            self.forceCloseConnections()
        }
        EventLoopFuture.andAllComplete(everyListenerDone, on: loop).whenComplete { _ in
            deadline.cancel()
            stopped?.succeed()
        }
    }

    /// The Host and Origin checks of HTTP requests, with this machine's names looked up once.
    let httpPolicy: HTTPRequestPolicy
    private let openChannels = Mutex<[ObjectIdentifier: any Channel]>([:])
    /// What every peer holds, and the connections each has open.
    let ledger: PeerLedger
    /// Refused connections are logged, but a flood of them must not flood the journal.
    private let refusedLog = LogRateLimiter(burst: 10, per: .seconds(1))
    /// The same for refused frames (oversize, over the budget, too slow).
    private let refusedFrameLog = LogRateLimiter(burst: 10, per: .seconds(1))

    private func forceCloseConnections() {
        for channel in openChannels.withLock({ Array($0.values) }) { channel.close(promise: nil) }
    }

    /// A `tls://` or `https://` endpoint needs the TLS context.
    func requireTLSContext(for endpoint: RPCEndpoint) throws {
        guard endpoint.isTLS, configuration.tls == nil else { return }
        throw RPCServerError(
            endpoint: endpoint, reason: "a tls:// or https:// listener needs [TLS] Certificate= and PrivateKey= in rpcd.conf",
            errno: nil)
    }

    /// Binds `endpoint`; while kept sockets are being released (`releasing`), a port still in use is tried
    /// again every 50 ms for up to 2 s.
    private func bind(_ endpoint: RPCEndpoint, whileReleasing releasing: Bool) async throws -> Listener {
        var attempts = 0
        while true {
            do {
                return try await bind(endpoint)
            } catch let error as RPCServerError where releasing && error.errno == EADDRINUSE && attempts < 40 {
                attempts += 1
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    private func bind(_ endpoint: RPCEndpoint) async throws -> Listener {
        try requireTLSContext(for: endpoint)
        let quiescing = ServerQuiescingHelper(group: group)
        var bootstrap = makeBootstrap(quiescing: quiescing, endpoint: endpoint)
        do {
            // The socket is made here rather than by NIO's bind, so that its descriptor is known: a restart keeps
            // it (`Configuration.keepSockets`).
            let descriptor: Int32
            if let (host, port) = endpoint.tcpAddress {
                bootstrap = Self.withTCPOptions(bootstrap)
                descriptor = try Self.listeningSocket(at: try SocketAddress.makeAddressResolvingHost(host, port: port))
            } else if let path = endpoint.unixPath {
                try Self.prepareSocketDirectory(for: path)
                try Self.removeStaleSocketFile(at: path)
                descriptor = try Self.listeningSocket(at: try SocketAddress(unixDomainSocketPath: path))
                // Every local user may connect, as every local user may reach a loopback TCP listener; what each
                // may call is for the access rules to say, by the peer's credentials (docs/SECURITY.md).
                guard chmod(path, 0o666) == 0 else {
                    let failure = IOError(errnoCode: errno, reason: "chmod \(path)")
                    close(descriptor)
                    throw failure
                }
            } else {
                preconditionFailure("an endpoint is TCP or a Unix socket")
            }
            let channel = try await bootstrap.withBoundSocket(descriptor).get()
            let actual = channel.localAddress?.port.map { endpoint.withPort($0) } ?? endpoint
            return Listener(endpoint: actual, channel: channel, quiescing: quiescing, ownSocket: descriptor)
        } catch {
            throw RPCServerError(endpoint: endpoint, reason: "\(error)", errno: (error as? IOError)?.errnoCode)
        }
    }

    func makeBootstrap(quiescing: ServerQuiescingHelper, endpoint: RPCEndpoint) -> ServerBootstrap {
        let listener = router.statistics.metrics.listener(endpoint.description, tls: endpoint.isTLS)
        let limiter = { @Sendable in
            ConnectionLimiter(
                maxConnections: self.configuration.limits.maxConnections, statistics: self.router.statistics,
                listener: listener, logger: self.logger, log: self.refusedLog)
        }
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.maxMessagesPerRead, value: 16)
            // Nothing is accepted until every listener is bound and recorded (`start`): a connection that was
            // already waiting on a socket systemd passed must see the whole server, in rpcd.info too.
            .serverChannelOption(.autoRead, value: false)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(limiter())
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelOption(.autoRead, value: true)
            .childChannelInitializer { channel in
                RPCPeer.of(channel).flatMapThrowing { peer in
                    // A peer is admitted (and counted) before its TLS handshake, so handshakes are limited too.
                    guard let account = self.admit(channel, peer: peer, endpoint: endpoint, listener: listener) else { return }
                    guard endpoint.isTLS, let tls = self.configuration.tls else {
                        return try self.initializeConnection(
                            channel, peer: peer, account: account, endpoint: endpoint, listener: listener)
                    }
                    // The RPC pipeline goes in once the handshake has said who the client is.
                    let handshake = TLSHandshakeHandler(
                        timeout: self.configuration.limits.frameTimeout, listener: listener,
                        completed: { channel, identities in
                            var peer = peer
                            peer.certificateIdentities = identities
                            try self.initializeConnection(
                                channel, peer: peer, account: account, endpoint: endpoint, listener: listener)
                        },
                        failed: { error in self.logHandshakeFailure(error, peer: peer, listener: listener) })
                    try channel.pipeline.syncOperations.addHandlers(
                        TLSResumptionObserver { resumed in if resumed { handshake.sessionResumed() } },
                        NIOSSLServerHandler(context: tls.context),
                        handshake)
                }
            }
    }

    /// Opens the connection's account in the ledger, counted against its peer's limit; nil (and the connection
    /// closed) when that is reached, or when only the administrators' reserve of connections is left and the
    /// peer is not one of them. The account is closed with the connection, giving back all it holds.
    private func admit(_ channel: any Channel, peer: RPCPeer, endpoint: RPCEndpoint, listener: RPCListenerMetrics) -> PeerAccount? {
        guard let account = ledger.open(peer) else {
            listener.refused(.peerLimit)
            refuse(channel, peer: peer, endpoint: endpoint, limit: configuration.limits.maxConnectionsPerPeer,
                   "Connection limit per peer reached; refusing connection")
            return nil
        }
        let limits = configuration.limits
        let open = limits.maxConnections - RPCLimits.administratorConnectionReserve(maxConnections: limits.maxConnections)
        if !account.isAdministrator, router.statistics.openConnections.value > open {
            account.close()
            listener.refused(.reserve)
            refuse(channel, peer: peer, endpoint: endpoint, limit: open, "Connection limit reached; refusing connection")
            return nil
        }
        channel.closeFuture.whenComplete { _ in account.close() }
        return account
    }

    /// Logs the refusal and ends the connection: an HTTP client in clear gets a 503 first
    /// (`HTTPConnectionRefusal`); any other is closed at once (an `https://` one before its TLS handshake).
    private func refuse(_ channel: any Channel, peer: RPCPeer, endpoint: RPCEndpoint, limit: Int, _ message: Logger.Message) {
        if let suppressed = refusedLog.admit() {
            var metadata: Logger.Metadata = [LogField.peer: "\(peer)", LogField.limit: "\(limit)"]
            if suppressed > 0 { metadata[LogField.suppressed] = "\(suppressed)" }
            logger.warning(message, metadata: metadata)
        }
        guard endpoint.isHTTP, !endpoint.isTLS, (try? channel.pipeline.syncOperations.addHandler(HTTPConnectionRefusal(limit: limit))) != nil
        else { return channel.close(promise: nil) }
    }

    /// A client that failed its TLS handshake (no certificate where one is required, one from another CA, not
    /// TLS at all, too slow): logged with the reason, as refused connections are, at most ten a second.
    private func logHandshakeFailure(_ error: any Error, peer: RPCPeer, listener: RPCListenerMetrics) {
        listener.tlsFailed?.increment()
        listener.refused(.tlsHandshake)
        guard let suppressed = refusedLog.admit() else { return }
        var metadata: Logger.Metadata = [LogField.peer: "\(peer)", LogField.error: "\(error)"]
        if suppressed > 0 { metadata[LogField.suppressed] = "\(suppressed)" }
        logger.notice("TLS handshake failed; connection closed", metadata: metadata)
    }

    private func initializeConnection(
        _ channel: any Channel, peer: RPCPeer, account: PeerAccount, endpoint: RPCEndpoint, listener: RPCListenerMetrics
    ) throws {
        let id = nextConnectionID.wrappingAdd(1, ordering: .relaxed).oldValue
        let connection = RPCConnectionInfo(
            id: id, peer: peer, logger: logger, peerLog: account.log, account: account, listener: listener)
        if logger.logLevel <= .debug {
            connection.logger.debug("Connection opened", metadata: [LogField.listener: "\(endpoint)"])
        }

        let key = ObjectIdentifier(channel)
        openChannels.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { _ in
            _ = self.openChannels.withLock { $0.removeValue(forKey: key) }
            if connection.baseLogger.logLevel <= .debug { connection.logger.debug("Connection closed") }
        }

        if endpoint.isHTTP {
            try HTTPConnectionPipeline.addHandlers(
                to: channel,
                .init(configuration: configuration, router: router, connection: connection, refusalLog: refusedFrameLog, policy: httpPolicy))
        } else {
            try channel.pipeline.syncOperations.addHandlers(
                ConnectionPipeline.handlers(
                    configuration: configuration, router: router, connection: connection, refusalLog: refusedFrameLog))
        }
    }

    /// Options of accepted TCP connections: no Nagle delay (replies are small and answered at once), and
    /// keepalive probes after a minute of silence, every 10 s, 6 times, so that a peer that vanished without a
    /// FIN (unplugged, rebooted) frees its connection after about two minutes instead of never.
    static func withTCPOptions(_ bootstrap: ServerBootstrap) -> ServerBootstrap {
        bootstrap
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelOption(ChannelOptions.Types.SocketOption(level: .tcp, name: .init(rawValue: TCP_KEEPIDLE)), value: 60)
            .childChannelOption(ChannelOptions.Types.SocketOption(level: .tcp, name: .init(rawValue: TCP_KEEPINTVL)), value: 10)
            .childChannelOption(ChannelOptions.Types.SocketOption(level: .tcp, name: .init(rawValue: TCP_KEEPCNT)), value: 6)
    }

    /// Creates a Unix socket's directory when missing, so a development run needs no setup; under systemd,
    /// `RuntimeDirectory=` has made it already.
    private static func prepareSocketDirectory(for path: String) throws {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
        guard !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) else { return }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }
}

/// A listener could not be bound.
package struct RPCServerError: Error, CustomStringConvertible, Sendable {
    package var endpoint: RPCEndpoint
    package var reason: String
    /// The system's errno, when the failure was a system call's (EADDRINUSE, EACCES, ...).
    package var errno: Int32?
    package var description: String { "cannot listen on \(endpoint): \(reason)" }
}

/// What `rpcd.info` reports about the server itself. Thread-safe.
package final class RPCServerState: Sendable {
    package let startTime = ContinuousClock.now
    package let startDate = Date()
    private let boundListeners = Mutex<[RPCEndpoint]>([])

    package init() {}

    package var listeners: [RPCEndpoint] { boundListeners.withLock { $0 } }

    /// The limits a client paces itself by, as `rpcd.info` shows them (docs/PROTOCOL.md §4).
    package var limits: (maxFrameSize: Int, maxCallsPerConnection: Int) { servedLimits.withLock { $0 } }
    private let servedLimits = Mutex<(maxFrameSize: Int, maxCallsPerConnection: Int)>((0, 0))

    func setLimits(maxFrameSize: Int, maxCallsPerConnection: Int) {
        servedLimits.withLock { $0 = (maxFrameSize, maxCallsPerConnection) }
    }

    func setListeners(_ endpoints: [RPCEndpoint]) {
        boundListeners.withLock { $0 = endpoints }
    }
}
