/// Which calls get a log entry of their own. Calls that fail are always logged (at `info`, internal errors at
/// `error`), and so are slow ones (at `warning`); with `logEveryCall` every completed call is logged at `info`.
/// Fixed for the router's lifetime: the check is on every call's path.
package struct RPCCallLogPolicy: Hashable, Sendable {
    /// `LogCalls=`: an entry for every completed call.
    package var logEveryCall: Bool
    /// `SlowCallThreshold=`: calls that take longer are logged at `warning`; nil logs none as slow.
    package var slowCallThreshold: Duration? {
        didSet { slowCallNanoseconds = Self.nanoseconds(slowCallThreshold) }
    }
    /// `slowCallThreshold` in nanoseconds, what a call's duration is compared with (kept: converting a
    /// `Duration` divides 128-bit integers).
    private(set) var slowCallNanoseconds: Int64?

    package init(logEveryCall: Bool = false, slowCallThreshold: Duration? = .seconds(1)) {
        self.logEveryCall = logEveryCall
        self.slowCallThreshold = slowCallThreshold
        self.slowCallNanoseconds = Self.nanoseconds(slowCallThreshold)
    }

    private static func nanoseconds(_ duration: Duration?) -> Int64? {
        duration.map { $0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000 }
    }
}
