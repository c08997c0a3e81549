import CSystemd
package import Logging
import RPCLogging
import ServiceLifecycle

/// Pings systemd's watchdog (`WATCHDOG=1`) only while rpcd is healthy: every event loop and the worker pool
/// must have run a liveness probe since the previous check.
///
/// Every `interval / 3` it checks the round of probes launched at the previous check: complete, it pings
/// and launches the next round; incomplete, it does not ping, logs which loop is stuck, and keeps waiting for
/// that round (so a stuck loop does not pile up probes). A stall that lasts about `WatchdogSec=` thus stops
/// the pings for longer than systemd allows, and systemd kills and restarts rpcd. There is deliberately no
/// unconditional ping. Runs on the Swift concurrency pool, never on an event loop. Ends at graceful shutdown.
package struct WatchdogService: Service, CustomStringConvertible {
    package let interval: Duration
    private let notifier: any ServiceNotifier
    private let probe: LivenessProbe
    private let logger: Logger

    package init(interval: Duration, notifier: any ServiceNotifier, probe: LivenessProbe, logger: Logger) {
        self.interval = interval
        self.notifier = notifier
        self.probe = probe
        self.logger = logger
    }

    /// The watchdog interval systemd asks for (`WatchdogSec=`, via `$WATCHDOG_USEC` and `$WATCHDOG_PID`), or
    /// nil when there is no watchdog for this process.
    package static func configuredInterval() throws(SystemdError) -> Duration? {
        var microseconds: UInt64 = 0
        let enabled = try SystemdError.check(sd_watchdog_enabled(0, &microseconds), "sd_watchdog_enabled")
        guard enabled > 0, microseconds > 0 else { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }

    /// What swift-service-lifecycle logs for this service.
    package var description: String { "WatchdogService" }

    package func run() async throws {
        let period = interval / 3
        logger.info("Watchdog enabled", metadata: [LogField.watchdogMicroseconds: "\(interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)"])
        var round = probe.launch()
        var stalled = false
        while !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: period) }
            } catch {
                return
            }
            guard round.isComplete else {
                if !stalled {
                    logger.error(
                        "Liveness probe not answered; withholding the watchdog ping",
                        metadata: [LogField.error: "no answer from \(probe.describeMissing(round).joined(separator: ", "))"])
                    stalled = true
                }
                continue
            }
            if stalled {
                logger.notice("Liveness probe answered again; watchdog pings resume")
                stalled = false
            }
            if case .failed(let error) = notifier.send(.watchdog) {
                logger.warning("Watchdog ping failed", metadata: [LogField.error: "\(error)"])
            }
            round = probe.launch()
        }
    }
}
