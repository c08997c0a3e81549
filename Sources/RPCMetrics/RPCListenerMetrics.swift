/// The series of one listener (labelled with its `Listen=` address), made when the server sets it up.
/// Thread-safe: connections of one listener are served on every event loop.
package final class RPCListenerMetrics: Sendable {
    /// Why a connection was closed at once.
    package enum Refusal: String, Sendable, CaseIterable {
        /// `MaxConnections=` (or, for TCP, what it leaves beside the Unix socket's reserve).
        case limit
        /// `MaxConnectionsPerPeer=`.
        case peerLimit = "peer_limit"
        /// Only the administrators' reserve of connections was left.
        case reserve
        /// The TLS handshake failed or did not finish in time.
        case tlsHandshake = "tls_handshake"
    }

    package let listener: String
    /// Connections open now.
    package let connections: RPCGauge
    package let accepted: RPCCounter
    package let received: RPCCounter
    package let sent: RPCCounter
    private let refusals: [Refusal: RPCCounter]
    /// Nil on a listener without TLS.
    package let tlsSucceeded: RPCCounter?
    package let tlsFailed: RPCCounter?
    package let tlsResumed: RPCCounter?

    init(registry: RPCMetricRegistry, listener: String, tls: Bool) {
        self.listener = listener
        connections = registry.gauge(.connectionsOpen, [listener])
        accepted = registry.counter(.connectionsAccepted, [listener])
        received = registry.counter(.receivedBytes, [listener])
        sent = registry.counter(.sentBytes, [listener])
        refusals = Dictionary(uniqueKeysWithValues: Refusal.allCases.filter { tls || $0 != .tlsHandshake }.map {
            ($0, registry.counter(.connectionsRefused, [listener, $0.rawValue]))
        })
        tlsSucceeded = tls ? registry.counter(.tlsHandshakes, [listener, "ok"]) : nil
        tlsFailed = tls ? registry.counter(.tlsHandshakes, [listener, "failed"]) : nil
        tlsResumed = tls ? registry.counter(.tlsResumedHandshakes, [listener]) : nil
    }

    package func refused(_ reason: Refusal) {
        refusals[reason]?.increment()
    }

    /// The listener's figures now.
    package var snapshot: RPCMetricsSnapshot.Listener {
        RPCMetricsSnapshot.Listener(
            listener: listener, open: connections.value, accepted: accepted.value,
            refused: refusals.values.reduce(0) { $0 + $1.value }, receivedBytes: received.value, sentBytes: sent.value,
            tlsHandshakes: tlsSucceeded?.value ?? 0, tlsResumed: tlsResumed?.value ?? 0)
    }
}
