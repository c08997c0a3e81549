/// Which calls get a log entry of their own. Calls that fail are always logged (at `info`, internal errors at
/// `error`), and so are slow ones (at `warning`); with `logEveryCall` every completed call is logged at `info`.
/// Fixed for the router's lifetime: the check is on every call's path.
package struct RPCCallLogPolicy: Hashable, Sendable {
    /// `LogCalls=`: an entry for every completed call.
    package var logEveryCall: Bool
    /// `SlowCallThreshold=`: calls that take longer are logged at `warning`; nil logs none as slow.
    package var slowCallThreshold: Duration?

    package init(logEveryCall: Bool = false, slowCallThreshold: Duration? = .seconds(1)) {
        self.logEveryCall = logEveryCall
        self.slowCallThreshold = slowCallThreshold
    }
}
