import Synchronization

/// Counters for `rpcd.info` and the daemon's status line. Lock-free; safe from any thread.
package final class RPCStatistics: Sendable {
    /// Calls routed (requests and notifications, including those answered with an error).
    package let calls = Atomic<Int>(0)
    /// Calls and messages answered with an error object.
    package let errors = Atomic<Int>(0)
    /// Calls refused by the access rules (also counted in `errors`).
    package let deniedCalls = Atomic<Int>(0)
    /// Calls cancelled by their caller (`rpc.cancel`) or by their connection's end.
    package let cancelledCalls = Atomic<Int>(0)
    /// Connections open now.
    package let openConnections = Atomic<Int>(0)
    /// Connections accepted since start.
    package let acceptedConnections = Atomic<Int>(0)
    /// Connections closed at once because `MaxConnections=` was reached.
    package let rejectedConnections = Atomic<Int>(0)
    /// Bytes of received frames held now, across connections (see `MaxBufferedBytes=`).
    package let bufferedBytes = Atomic<Int>(0)
    /// Frames refused because `MaxBufferedBytes=` was reached, or not completed within `FrameTimeout=`.
    package let refusedFrames = Atomic<Int>(0)
    /// TLS handshakes completed on `tls://` listeners, and of them those that resumed a session (a TLS 1.3
    /// ticket the client kept): `rpcd.info`'s `tls`, and what a metrics exporter reads.
    package let tlsHandshakes = Atomic<Int>(0)
    package let tlsResumedHandshakes = Atomic<Int>(0)
    /// The latest internal error (a call, a handler, a reload), for the status line. A lock, but taken only
    /// when something has gone wrong and when the status is read.
    private let latestError = Mutex<String?>(nil)

    package init() {}

    package func recordError(_ description: String) {
        latestError.withLock { $0 = description }
    }

    package var lastError: String? { latestError.withLock { $0 } }
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
