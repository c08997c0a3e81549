import Synchronization

/// Lets at most `burst` entries of one kind through per `interval`, and counts the rest, so that what a peer
/// can trigger at will (refused calls, say) cannot flood the journal. The first entry after a suppressed
/// stretch reports how many were dropped (`LogField.suppressed`). Thread-safe.
package final class LogRateLimiter: Sendable {
    private struct State {
        var windowStart: ContinuousClock.Instant
        var used = 0
        var suppressed = 0
    }

    private let burst: Int
    private let interval: Duration
    private let state: Mutex<State>

    package init(burst: Int = 10, per interval: Duration = .seconds(1)) {
        self.burst = burst
        self.interval = interval
        self.state = Mutex(State(windowStart: .now))
    }

    /// nil when this entry must be dropped; otherwise how many entries were dropped since the last one logged.
    package func admit(now: ContinuousClock.Instant = .now) -> Int? {
        state.withLock { state in
            if now - state.windowStart >= interval {
                state.windowStart = now
                state.used = 0
            }
            guard state.used < burst else {
                state.suppressed += 1
                return nil
            }
            state.used += 1
            defer { state.suppressed = 0 }
            return state.suppressed
        }
    }
}
