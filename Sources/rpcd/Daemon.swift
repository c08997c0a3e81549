import Foundation
import JSONRPC
import Logging
import NIOCore
import NIOPosix
import RPCAvahi
import RPCConfig
import RPCCore
import RPCModules
import RPCServer
import ServiceLifecycle
import UnixSignals

/// The assembled daemon: built-in services plus the configured module handlers behind one router, the
/// server, and reload. Everything long-running is a `Service` in one `ServiceGroup`, so SIGTERM/SIGINT stop
/// them in reverse order.
struct Daemon {
    let settings: ServerConfiguration
    let host: ModuleHost
    let logger: Logger

    /// Built-in services, which no handler may replace.
    static func builtinServices(state: RPCServerState, statistics: RPCStatistics) -> [any RPCService] {
        [RPCDiscoverService(), DaemonService(state: state, statistics: statistics), DemoService()]
    }

    func run(group: MultiThreadedEventLoopGroup, pool: NIOThreadPool, reloadConfiguration: @escaping @Sendable () throws -> ServerConfiguration) async throws {
        let statistics = RPCStatistics()
        let state = RPCServerState()
        let builtins = Self.builtinServices(state: state, statistics: statistics)

        let generation = try host.prepare(strict: false)
        let router = RPCRouter(
            registry: try RPCServiceRegistry(services: builtins + generation.services, unavailable: generation.unavailable),
            parser: RPCEnvelopeParser(maxNestingDepth: settings.maxNestingDepth, maxBatchLength: settings.maxBatchLength),
            statistics: statistics)
        host.commit(generation)

        let server = RPCServer(
            configuration: RPCServer.Configuration(
                listen: settings.listen, maxFrameSize: settings.maxFrameSize,
                maxConnections: settings.maxConnections, maxCallsPerConnection: settings.maxCallsPerConnection,
                idleTimeout: settings.idleTimeout.map { TimeAmount($0) }),
            router: router, state: state, group: group, logger: logger)
        let advertising = AdvertisingService(settings: settings.avahi, logger: logger)
        advertising.update(Advertising.advertisements(for: generation.services))
        let reload = ReloadService(
            host: host, router: router, builtins: builtins, running: settings, reloadConfiguration: reloadConfiguration,
            logger: logger, didReload: { advertising.update(Advertising.advertisements(for: $0.services)) })

        let services = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: ListeningServer(server: server, onBound: advertising.listenersBound)),
                    .init(service: reload),
                    .init(service: advertising),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        defer { host.retireAll() }
        try await services.run()
    }
}

/// Reloads on SIGHUP: re-reads rpcd.conf and every handler file, starts new and changed handlers, swaps
/// the router's registry, and retires what was replaced once its calls are done. Connections stay open. A
/// configuration that does not parse changes nothing and is logged.
struct ReloadService: Service {
    let host: ModuleHost
    let router: RPCRouter
    let builtins: [any RPCService]
    let running: ServerConfiguration
    let reloadConfiguration: @Sendable () throws -> ServerConfiguration
    let logger: Logger
    /// Told about each generation that now serves (the DNS-SD publisher updates its records).
    var didReload: @Sendable (ModuleHost.Generation) -> Void = { _ in }

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            await reload()
        }
    }

    func reload() async {
        logger.notice("Reloading configuration")
        do {
            let settings = try reloadConfiguration()
            if settings != running {
                // Listeners, limits and threads are fixed when the daemon starts.
                logger.warning("rpcd.conf changed; [Server] settings take effect at the next restart")
            }
            // dlopen and module init block: keep them off the event loops and the cooperative pool's hot path.
            let generation = try await Task.detached { try host.prepare(strict: true) }.value
            router.replaceRegistry(
                try RPCServiceRegistry(services: builtins + generation.services, unavailable: generation.unavailable))
            host.commit(generation)
            didReload(generation)
            logger.notice(
                "Reloaded", metadata: ["rpcd_services": "\(generation.services.map(\.descriptor.name).sorted().joined(separator: ","))"])
        } catch {
            logger.error("Reload failed; the previous configuration keeps serving", metadata: [LogField.error: "\(error)"])
        }
    }
}
