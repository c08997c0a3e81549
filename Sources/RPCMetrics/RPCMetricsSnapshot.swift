/// The calls and connections counted now, read straight from the series (`RPCMetrics.snapshot()`): what
/// `rpcd.info`, `rpcd.metrics` and the status line report, with no exposition rendered or parsed.
package struct RPCMetricsSnapshot: Sendable {
    /// One method's calls: answered ones by outcome, and (with metrics on) their durations.
    package struct Method: Sendable {
        package var service: String
        package var method: String
        /// `ok` first, then the error outcomes in the order they first happened.
        package var outcomes: [(outcome: String, calls: Int)]
        /// Nil with `Metrics=no`, and for the fixed labels of calls that route nowhere.
        package var duration: RPCDurationHistogram.Snapshot?

        /// Calls answered.
        package var calls: Int { outcomes.reduce(0) { $0 + $1.calls } }

        package func calls(_ outcome: String) -> Int {
            outcomes.first { $0.outcome == outcome }?.calls ?? 0
        }
    }

    package struct Listener: Sendable, Equatable {
        package var listener: String
        package var open: Int
        package var accepted: Int
        /// Connections closed at once, every reason together.
        package var refused: Int
        package var receivedBytes: Int
        package var sentBytes: Int
        /// TLS handshakes that succeeded, and those of them that resumed a session.
        package var tlsHandshakes: Int
        package var tlsResumed: Int

        package init(
            listener: String, open: Int, accepted: Int, refused: Int, receivedBytes: Int, sentBytes: Int,
            tlsHandshakes: Int, tlsResumed: Int
        ) {
            self.listener = listener
            self.open = open
            self.accepted = accepted
            self.refused = refused
            self.receivedBytes = receivedBytes
            self.sentBytes = sentBytes
            self.tlsHandshakes = tlsHandshakes
            self.tlsResumed = tlsResumed
        }
    }

    /// Every method counted since start (declared ones, also those a reload removed, and the fixed labels of
    /// unknown methods and messages that are no call), in the order first declared.
    package var methods: [Method]
    package var listeners: [Listener]
    package var callsInFlight: Int

    /// Calls answered since start, all methods together.
    package var callsAnswered: Int { methods.reduce(0) { $0 + $1.calls } }

    /// Calls answered with `outcome` (`ok`, or an error code), all methods together.
    package func calls(_ outcome: String) -> Int {
        methods.reduce(0) { $0 + $1.calls(outcome) }
    }
}
