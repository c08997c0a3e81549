import Logging
import RPCConfig
import RPCCore
import RPCLogging
import RPCModules
import RPCServer
import RPCSystemd
import RPCTLS
import ServiceLifecycle

/// Reloads on SIGHUP (`systemctl reload rpcd`): re-reads rpcd.conf and every handler file, starts new and
/// changed handlers, swaps the router's registry, and retires what was replaced once its calls are done.
/// Connections stay open. A configuration that does not parse changes nothing and is logged.
///
/// systemd hears `RELOADING=1` (with `MONOTONIC_USEC=`) when a reload begins and `READY=1` when it is over,
/// successful or not: a failed reload leaves the previous configuration serving, which is ready too.
///
/// `Hangups` is the daemon's `UnixSignalsSequence`; tests hand it any sequence, so that they never trap a signal in
/// their own process (a disposition children would inherit).
struct ReloadService<Hangups: AsyncSequence & Sendable>: Service, CustomStringConvertible where Hangups.Element: Sendable {
    let handlers: HandlerSet
    let router: RPCRouter
    let builtins: [any RPCService]
    let running: ServerConfiguration
    /// The context of the `tls://` listeners, whose files are read again on every reload.
    let tls: TLSServerContext?
    let reloadConfiguration: @Sendable () throws -> ServerConfiguration
    let logLevel: LogLevelControl
    let notifier: any ServiceNotifier
    let status: DaemonStatus
    let logger: Logger
    /// Where SIGHUP and `rpcd.reload` queue reloads; this service runs them.
    let requests: ReloadRequests
    /// SIGHUPs, trapped since the daemon began to start (`Daemon.run`), so none is lost or fatal.
    let hangups: Hangups
    /// Told about each generation that now serves (the DNS-SD publisher updates its records).
    var didReload: @Sendable (HandlerSet.Generation) -> Void = { _ in }

    /// What swift-service-lifecycle logs for this service (the default would print every stored property).
    var description: String { "ReloadService" }

    func run() async throws {
        // SIGHUP and `rpcd.reload` both go through `requests`, so reloads never overlap.
        await requests.serve { await reload() }
        for try await _ in hangups.cancelOnGracefulShutdown() {
            _ = await requests.reload()
        }
        await requests.stop()
    }

    /// Reloads now; call it through `requests`, which runs one reload at a time.
    func reload() async -> ReloadRequests.Outcome {
        let outcome: ReloadRequests.Outcome
        notifier.send(.reloading, .monotonicNow(), .status("Reloading"))
        logger.notice("Reloading configuration")
        do {
            let settings = try reloadConfiguration()
            var fixed = settings
            fixed.logLevel = running.logLevel
            fixed.access = running.access
            fixed.tls = running.tls
            if fixed != running {
                // Listeners, limits, threads, call logging and [Avahi] are fixed when the daemon starts.
                logger.warning("rpcd.conf changed; [Server] and [Avahi] settings other than LogLevel= take effect at the next restart")
            }
            logLevel.level = Logger.Level(settings.logLevel)
            reloadTLS(settings.tls)
            // dlopen and module init block: keep them off the event loops and the cooperative pool's hot path.
            let generation = try await Task.detached { try handlers.prepare(strict: true) }.value
            router.replaceRegistry(
                try RPCServiceRegistry(
                    services: builtins + generation.services, unavailable: generation.unavailable, refusals: generation.refusals,
                    access: RPCAccessPolicy(settings: settings, handlers: generation.services, logger: logger),
                    metrics: router.statistics.metrics))
            handlers.commit(generation)
            didReload(generation)
            if let problem = generation.problems.last { router.statistics.recordError(problem) }
            let services = generation.services.map(\.descriptor.name).sorted()
            logger.notice(
                "Reloaded",
                metadata: [LogField.messageID: "\(LogMessageID.reloaded)", LogField.exposure: "\(status.exposure())",
                           LogField.services: "\(services.joined(separator: ","))"])
            outcome = .reloaded(services: services, refused: generation.refusals)
            router.statistics.reloadsSucceeded.increment()
        } catch {
            router.statistics.reloadsFailed.increment()
            router.statistics.recordError("reload: \(error)")
            logger.error(
                "Reload failed; the previous configuration keeps serving",
                metadata: [LogField.error: "\(error)", LogField.messageID: "\(LogMessageID.reloadFailed)"])
            outcome = .failed("\(error)")
        }
        notifier.send(.ready, .status(status.text()))
        return outcome
    }

    /// Re-reads the TLS files (a renewed certificate, a new client CA): connections accepted from now on use
    /// them, established ones keep theirs. Files that cannot be used leave the previous ones serving; that is
    /// logged, and the rest of the reload goes on.
    private func reloadTLS(_ settings: TLSSettings) {
        guard let tls else { return }
        do {
            try tls.reload(files: try TLSSetup.files(of: settings))
            logger.info("TLS files read again", metadata: [LogField.file: "\(settings.certificate ?? "")"])
        } catch {
            router.statistics.recordError("reload: TLS: \(error)")
            logger.error(
                "TLS files not reloaded; the previous certificate and key keep serving",
                metadata: [LogField.error: "\(error)"])
        }
    }
}
