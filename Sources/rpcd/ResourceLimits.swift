#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import RPCCore
import RPCLogging

enum ResourceLimits {
    /// Raises the soft limit on open files to the hard limit: each connection is a descriptor, and the usual
    /// soft limit of 1024 would cap `MaxConnections=` long before memory does (systemd recommends this for
    /// daemons, see systemd.exec(5) LimitNOFILE=).
    static func raiseOpenFileLimit(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        let previous = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            logger.warning("Could not raise the open file limit", metadata: [LogField.error: "errno \(errno)"])
        } else {
            logger.debug("Raised the open file limit", metadata: [LogField.previousValue: "\(previous)", LogField.newValue: "\(limit.rlim_cur)"])
        }
    }
}
