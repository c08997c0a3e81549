#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RPCJSON
import RPCCore
import RPCProtocol
import Synchronization

/// The one-line status systemd shows (`systemctl status rpcd`, `STATUS=`):
///
///     Serving 7 services on 2 listeners; other hosts: nothing; 3 connections; 41.5 calls/s; last error: none
///
/// Calls per second are averaged between two calls of `text()`. Thread-safe.
final class DaemonStatus: Sendable {
    private let router: RPCRouter
    private let listeners: @Sendable () -> [RPCEndpoint]
    private let previous: Mutex<(time: ContinuousClock.Instant, calls: Int)>

    init(router: RPCRouter, listeners: @escaping @Sendable () -> [RPCEndpoint]) {
        self.router = router
        self.listeners = listeners
        self.previous = Mutex((ContinuousClock.now, router.statistics.callsAnswered))
    }

    /// What other hosts may call now (see `RPCAccessPolicy.exposure`).
    func exposure() -> String {
        router.registry.access.exposure(listeners: listeners())
    }

    func text() -> String {
        let statistics = router.statistics
        let now = ContinuousClock.now
        let calls = statistics.callsAnswered
        let rate = previous.withLock { previous in
            defer { previous = (now, calls) }
            let elapsed = now - previous.time
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return seconds > 0 ? Double(calls - previous.calls) / seconds : 0
        }
        let listeners = self.listeners()
        guard !listeners.isEmpty else { return "Binding listeners" }
        let registry = router.registry
        var text = "Serving \(registry.services.count) services"
        if !registry.unavailableServices.isEmpty { text += " (\(registry.unavailableServices.count) unavailable)" }
        text += " on \(listeners.count) listener\(listeners.count == 1 ? "" : "s")"
        text += "; \(registry.access.exposure(listeners: listeners))"
        text += "; \(statistics.openConnections.value) connections; \(FixedPointText.text(rate, digits: 1)) calls/s"
        text += "; last error: \(statistics.lastError.map { String($0.prefix(200)) } ?? "none")"
        return text
    }
}
