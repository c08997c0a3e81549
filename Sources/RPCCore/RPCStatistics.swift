package import RPCMetrics
public import Synchronization

/// The daemon's metrics (`RPCMetrics`), with the series every connection shares made once, and what the limits
/// and the status line need read at once. Lock-free on the hot path; safe from any thread.
///
/// Counts live in one place, the metrics registry: `rpcd.info`, `rpcd.metrics` and the status line read its
/// series directly (`snapshot()`, `framesRefused`, `bufferedBytes`), so they cannot disagree with a scrape and
/// never render or parse its text.
package final class RPCStatistics: Sendable {
    package let metrics: RPCMetrics
    /// Connections admitted now, across listeners: what `MaxConnections=` is checked against (the exported
    /// per-listener `rpcd_connections_open` counts the same connections once their listener has them).
    package let openConnections = Atomic<Int>(0)
    /// Frames refused, by reason.
    package let framesTooLarge: RPCCounter
    package let framesOverBudget: RPCCounter
    package let framesTimedOut: RPCCounter
    package let reloadsSucceeded: RPCCounter
    package let reloadsFailed: RPCCounter
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
        framesTooLarge = metrics.counter(.framesRefused, ["too_large"])
        framesOverBudget = metrics.counter(.framesRefused, ["budget"])
        framesTimedOut = metrics.counter(.framesRefused, ["timeout"])
        reloadsSucceeded = metrics.counter(.reloads, ["ok"])
        reloadsFailed = metrics.counter(.reloads, ["failed"])
        // The ledger's figures, read from the ledger of the moment when scraped.
        metrics.export(.bufferedBytes, gauge: { [weak self] in self?.budget.bufferedBytes ?? 0 })
        metrics.export(.bufferedBytesLimit, gauge: { [weak self] in self?.budget.limit ?? 0 })
        metrics.export(.largestPeerShare, gauge: { [weak self] in self?.heaviestPeers(1).first?.bytes ?? 0 })
        metrics.export(.peers, gauge: { [weak self] in self?.peerCount ?? 0 })
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

    private var currentLedger: PeerLedger? { ledger.withLock { $0.ledger } }

    /// Peers with a connection open now (0 outside a server).
    package var peerCount: Int { currentLedger?.peerCount ?? 0 }

    /// The `count` peers holding the most now (`PeerLedger.heaviest`); empty outside a server.
    package func heaviestPeers(_ count: Int) -> [PeerLedger.PeerUse] {
        currentLedger?.heaviest(count) ?? []
    }

    /// Calls answered since start, all methods together (the sum of `rpcd_calls_total`).
    package var callsAnswered: Int {
        metrics.snapshot().callsAnswered
    }

    /// The calls and connections counted now (`RPCMetrics.snapshot()`).
    package func snapshot() -> RPCMetricsSnapshot {
        metrics.snapshot()
    }

    /// Frames refused since start, by reason (the `reason` label of `rpcd_frames_refused_total`).
    package var framesRefused: [(reason: String, frames: Int)] {
        [("too_large", framesTooLarge.value), ("budget", framesOverBudget.value), ("timeout", framesTimedOut.value)]
    }

    /// What the server's ledger holds for peers now, and what it may hold (0 and 0 outside a server).
    package var budget: (bufferedBytes: Int, limit: Int) {
        guard let ledger = currentLedger else { return (0, 0) }
        return (ledger.charged, ledger.limit)
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
