#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import JSONRPC
package import Logging
import NIOCore
package import NIOPosix
import RPCAvahi
package import RPCConfig
import RPCConsole
package import RPCCore
package import RPCLogging
import RPCMetrics
package import RPCModuleHost
package import RPCModules
import RPCProtocol
package import RPCServer
package import RPCSystemd
package import RPCTLS
package import RPCWideArea
import ServiceLifecycle
package import UnixSignals

/// The assembled daemon: built-in services plus the configured module handlers behind one router, the
/// server, reload, and the service manager's view of it all (readiness, status, watchdog). Everything
/// long-running is a `Service` in one `ServiceGroup`, so SIGTERM/SIGINT stop them in reverse order.
package struct Daemon {
    let settings: ServerConfiguration
    let handlers: HandlerSet
    let logger: Logger
    let logLevel: LogLevelControl
    let notifier: any ServiceNotifier
    /// Sockets systemd passed to rpcd: a socket unit's, served as they are (every `Listen=` address none of
    /// them holds is bound as well), and those an earlier run kept in the file descriptor store
    /// (`ListenerStore`), each serving again the `Listen=` entry bound to its address.
    let activatedSockets: [ActivatedSocket]
    /// The context of the `tls://` listeners (`TLSSetup`), re-read on reload; nil without such a listener.
    let tls: TLSServerContext?
    /// `[WideArea] KeyFile=`'s TSIG key, read and checked at start-up; nil when wide-area publishing is off.
    let tsigKey: TSIGKey?

    package init(
        settings: ServerConfiguration, handlers: HandlerSet, logger: Logger, logLevel: LogLevelControl, notifier: any ServiceNotifier,
        activatedSockets: [ActivatedSocket], tls: TLSServerContext?, tsigKey: TSIGKey?
    ) {
        self.settings = settings
        self.handlers = handlers
        self.logger = logger
        self.logLevel = logLevel
        self.notifier = notifier
        self.activatedSockets = activatedSockets
        self.tls = tls
        self.tsigKey = tsigKey
    }

    /// Built-in services, which no handler may replace.
    package static func builtinServices(
        state: RPCServerState, statistics: RPCStatistics, events: RPCEventHub = RPCEventHub(),
        logLevel: LogLevelControl = LogLevelControl(), reloads: ReloadRequests? = nil
    ) -> [any RPCService] {
        [RPCDiscoverService(),
         DaemonService(state: state, statistics: statistics, events: events, logLevel: logLevel, reloads: reloads)]
    }

    /// Loads the handlers, binds, says READY=1, and serves until shutdown. Throws when start-up fails (the
    /// caller reports it to systemd) or a service fails later.
    package func run(
        group: MultiThreadedEventLoopGroup, pool: WorkerPool, hangups: UnixSignalsSequence,
        reloadConfiguration: @escaping @Sendable () throws -> ServerConfiguration
    ) async throws {
        let statistics = RPCStatistics(metrics: RPCMetrics(enabled: settings.metrics))
        statistics.metrics.bootstrapSwiftMetrics()
        let state = RPCServerState()
        let reloads = ReloadRequests()
        let builtins = Self.builtinServices(
            state: state, statistics: statistics, events: handlers.events, logLevel: logLevel, reloads: reloads)

        notifier.send(.status("Loading handlers"))
        let generation = try await StartupTimeout(notifier: notifier).extending {
            try handlers.prepare(strict: false)
        }
        if let problem = generation.problems.last { statistics.recordError(problem) }
        let router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: builtins + generation.services, unavailable: generation.unavailable, refusals: generation.refusals,
                access: RPCAccessPolicy(settings: settings, handlers: generation.services, logger: logger),
                metrics: statistics.metrics),
            parser: RPCEnvelopeParser(limits: settings.limits),
            statistics: statistics,
            callLog: RPCCallLogPolicy(logEveryCall: settings.logCalls, slowCallThreshold: settings.slowCallThreshold),
            maxReplySize: settings.limits.maxFrameSize, events: handlers.events)
        handlers.commit(generation)

        let passed = activatedSockets.filter { !ListenerStore.isStored($0) }
        let kept = activatedSockets.filter(ListenerStore.isStored)
        if !passed.isEmpty {
            logger.notice(
                "Socket activated",
                metadata: [LogField.sockets: "\(passed.map { "\($0.name)(fd \($0.descriptor))" }.joined(separator: ","))"])
        }
        if !kept.isEmpty {
            logger.notice(
                "Listening sockets kept across the restart",
                metadata: [LogField.sockets: "\(kept.map { "\($0.name)(fd \($0.descriptor))" }.joined(separator: ","))"])
        }
        let status = DaemonStatus(router: router, listeners: { state.listeners })
        var serverConfiguration = RPCServer.Configuration(
            listen: settings.listen, boundSockets: passed.map(\.descriptor), tls: tls, limits: settings.limits,
            http: settings.http, shutdownGracePeriod: settings.shutdownGracePeriod)
        // Every listener of Listen= goes into systemd's file descriptor store, so that a restart finds it bound
        // and listening (docs/OPERATIONS.md, "Restarts and upgrades"); one rpcd.conf no longer names leaves it.
        serverConfiguration.keptSockets = kept.map(\.descriptor)
        serverConfiguration.keepSockets = { [logger] serving, unused in
            for (endpoint, descriptor) in serving {
                let address = endpoint.unixPath ?? endpoint.tcpAddress.map { RPCEndpoint.tcp(host: $0.host, port: $0.port).description } ?? ""
                if case .failed(let error) = ListenerStore.keep(descriptor, name: ListenerStore.name(forAddress: address)) {
                    logger.warning(
                        "Listening socket not kept for restarts", metadata: [LogField.listener: "\(endpoint)", LogField.error: "\(error)"])
                }
            }
            for socket in kept where unused.contains(socket.descriptor) {
                ListenerStore.remove(name: socket.name)
            }
        }
        // Prometheus scrapes GET /metrics on the HTTP listeners, allowed to whoever may call rpcd.metrics
        // (docs/OPERATIONS.md#metrics): the same exposition as `rpcd.metrics format=prometheus`.
        if settings.metrics {
            serverConfiguration.httpResources.append(
                HTTPResource(path: "/metrics", method: "rpcd.metrics", contentType: "text/plain; version=0.0.4; charset=utf-8") {
                    request in request.eventLoop.makeSucceededFuture(ByteBuffer(string: statistics.metrics.exposition()))
                })
        }
        if settings.http.console { serverConfiguration.httpResources += WebConsole.resources() }
        // The page for people at `/` (the console) is announced as _http._tcp; JSON-RPC's own records name the
        // HTTP ports in their TXT either way.
        let webPagePath = serverConfiguration.httpResources.contains { $0.path == "/" } ? "/" : nil
        let advertising = AdvertisingService(settings: settings, tsigKey: tsigKey, webPagePath: webPagePath, logger: logger)
        advertising.update(Advertising.advertisements(for: generation.services))
        // READY=1 once every listener is bound: from inside the service group, whose signal handling is in
        // place by then, so a SIGTERM right after READY is a graceful stop.
        let server = RPCServer(
            configuration: serverConfiguration,
            router: router, state: state, group: group, logger: logger
        ) { [notifier, logger] endpoints in
            guard !endpoints.isEmpty else {
                throw DaemonStartError("nothing to listen on: Listen= is empty and systemd passed no sockets")
            }
            advertising.listenersBound(endpoints)
            notifier.send(.ready, .status(status.text()))
            logger.notice(
                "Started",
                metadata: [LogField.messageID: "\(LogMessageID.started)",
                           LogField.exposure: "\(router.registry.access.exposure(listeners: endpoints))",
                           LogField.listeners: "\(endpoints.map(\.description).joined(separator: ","))",
                           LogField.services: "\(router.registry.services.map(\.descriptor.name).sorted().joined(separator: ","))"])
        }
        notifier.send(.status("Binding listeners"))

        let reload = ReloadService(
            handlers: handlers, router: router, builtins: builtins, running: settings, tls: tls, reloadConfiguration: reloadConfiguration,
            logLevel: logLevel, notifier: notifier, status: status, logger: logger, requests: reloads, hangups: hangups,
            didReload: { advertising.update(Advertising.advertisements(for: $0.services)) })
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: server), .init(service: reload)]
        if let interval = try WatchdogService.configuredInterval() {
            let watchdog = WatchdogService(
                interval: interval, notifier: notifier, probe: LivenessProbe(group: group, pool: pool), logger: logger)
            services.append(.init(service: watchdog))
        }
        // Shutdown runs in reverse: STOPPING=1 goes out first, then every DNS-SD record is withdrawn, and only
        // then do the listeners close, so no client is sent to a port that is about to go away.
        services.append(.init(service: advertising))
        services.append(.init(service: NotifyStatusService(notifier: notifier, status: { status.text() })))

        let serviceGroup = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        defer { handlers.retireAll() }
        try await serviceGroup.run()
    }
}
