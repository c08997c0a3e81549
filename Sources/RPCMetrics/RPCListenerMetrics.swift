import Prometheus

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

    /// Connections open now.
    package let connections: Gauge
    package let accepted: Counter
    package let received: Counter
    package let sent: Counter
    private let refusals: [Refusal: Counter]
    /// Nil on a listener without TLS.
    package let tlsSucceeded: Counter?
    package let tlsFailed: Counter?
    package let tlsResumed: Counter?

    init(metrics: RPCMetrics, listener: String, tls: Bool) {
        connections = metrics.gauge(.connectionsOpen, [("listener", listener)])
        accepted = metrics.counter(.connectionsAccepted, [("listener", listener)])
        received = metrics.counter(.receivedBytes, [("listener", listener)])
        sent = metrics.counter(.sentBytes, [("listener", listener)])
        refusals = Dictionary(uniqueKeysWithValues: Refusal.allCases.filter { tls || $0 != .tlsHandshake }.map {
            ($0, metrics.counter(.connectionsRefused, [("listener", listener), ("reason", $0.rawValue)]))
        })
        tlsSucceeded = tls ? metrics.counter(.tlsHandshakes, [("listener", listener), ("result", "ok")]) : nil
        tlsFailed = tls ? metrics.counter(.tlsHandshakes, [("listener", listener), ("result", "failed")]) : nil
        tlsResumed = tls ? metrics.counter(.tlsResumedHandshakes, [("listener", listener)]) : nil
    }

    package func refused(_ reason: Refusal) {
        refusals[reason]?.increment()
    }
}

extension RPCMetrics {
    /// The series of the listener on `address` (with its TLS handshakes when `tls`).
    package func listener(_ address: String, tls: Bool) -> RPCListenerMetrics {
        RPCListenerMetrics(metrics: self, listener: address, tls: tls)
    }
}
