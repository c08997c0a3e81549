import Prometheus
import RPCMetrics
import Synchronization

/// The daemon's metrics (`RPCMetrics`), with the series every connection shares made once, and what the limits
/// and the status line need read at once. Lock-free on the hot path; safe from any thread.
///
/// Counts live in one place, the metrics registry: `rpcd.info`, `rpcd.metrics` and the status line read them
/// back from its exposition (`snapshot()`), so they cannot disagree with a scrape.
package final class RPCStatistics: Sendable {
    package let metrics: RPCMetrics
    /// Connections admitted now, across listeners: what `MaxConnections=` is checked against (the exported
    /// per-listener `rpcd_connections_open` counts the same connections once their listener has them).
    package let openConnections = Atomic<Int>(0)
    /// Frames refused, by reason.
    package let framesTooLarge: Counter
    package let framesOverBudget: Counter
    package let framesTimedOut: Counter
    package let reloadsSucceeded: Counter
    package let reloadsFailed: Counter
    /// The latest internal error (a call, a handler, a reload), for the status line. A lock, but taken only
    /// when something has gone wrong and when the status is read.
    private let latestError = Mutex<String?>(nil)
    /// The server's ledger, for the heaviest peers (`rpcd.metrics`); weak: the server owns it.
    private let ledger = Mutex<WeakLedger>(WeakLedger())

    private struct WeakLedger {
        weak var ledger: PeerLedger?
    }

    package convenience init() {
        self.init(metrics: RPCMetrics())
    }

    package init(metrics: RPCMetrics) {
        self.metrics = metrics
        framesTooLarge = metrics.counter(.framesRefused, [("reason", "too_large")])
        framesOverBudget = metrics.counter(.framesRefused, [("reason", "budget")])
        framesTimedOut = metrics.counter(.framesRefused, [("reason", "timeout")])
        reloadsSucceeded = metrics.counter(.reloads, [("result", "ok")])
        reloadsFailed = metrics.counter(.reloads, [("result", "failed")])
    }

    package func recordError(_ description: String) {
        latestError.withLock { $0 = description }
    }

    package var lastError: String? { latestError.withLock { $0 } }

    /// Why a frame (or an HTTP request, or a WebSocket message) was refused before it was a call.
    package enum FrameRefusal: Sendable {
        /// Larger than `MaxFrameSize=` (413 over HTTP).
        case tooLarge
        /// The peer's share or the budget is spent (`MaxBufferedBytesPerPeer=`, `MaxBufferedBytes=`).
        case overBudget
        /// Not complete within `FrameTimeout=`.
        case timedOut
    }

    package func frameRefused(_ refusal: FrameRefusal) {
        switch refusal {
        case .tooLarge: framesTooLarge.increment()
        case .overBudget: framesOverBudget.increment()
        case .timedOut: framesTimedOut.increment()
        }
    }

    func attach(_ ledger: PeerLedger) {
        self.ledger.withLock { $0.ledger = ledger }
    }

    /// The `count` peers holding the most now (`PeerLedger.heaviest`); empty outside a server.
    package func heaviestPeers(_ count: Int) -> [PeerLedger.PeerUse] {
        ledger.withLock { $0.ledger }?.heaviest(count) ?? []
    }

    /// Calls answered since start, all methods together (the sum of `rpcd_calls_total`).
    package var callsAnswered: Int {
        Int(snapshot(includingProcess: false).sum(RPCMetricFamily.calls.name))
    }

    /// Every series now, read back from the exposition a scrape would get. `rpcd.info` and the status line,
    /// which show no process metrics, leave them out: no /proc reads on an event loop for them.
    package func snapshot(includingProcess: Bool = true) -> RPCMetricSamples {
        RPCMetricSamples(exposition: metrics.exposition(includingProcess: includingProcess))
    }
}

extension Atomic<Int> {
    /// Adds one, relaxed: these are statistics, not synchronisation.
    @inlinable
    package func increment(by delta: Int = 1) {
        _ = wrappingAdd(delta, ordering: .relaxed)
    }

    @inlinable
    package var value: Int { load(ordering: .relaxed) }
}
