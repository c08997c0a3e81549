package import Logging
package import RPCLogging

#if canImport(Glibc)
import Glibc
#endif

/// Where rpcd's log goes: natively to the journal when standard error is the journal's stream (systemd
/// sets `$JOURNAL_STREAM` to its device and inode, sd_journal_stream_fd(3)), else one line per entry on
/// standard error.
package enum LogOutput: Equatable, Sendable {
    case journal
    case console

    /// Decides from `$JOURNAL_STREAM` and what file descriptor 2 is. A `JOURNAL_STREAM` inherited by a
    /// process whose stderr was redirected elsewhere (a shell started from a service) does not count.
    package static func detect(environment: [String: String]) -> LogOutput {
        guard let stream = environment["JOURNAL_STREAM"] else { return .console }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .console }
        var status = stat()
        guard fstat(2, &status) == 0 else { return .console }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode ? .journal : .console
    }

    /// A swift-log factory for this output, every handler reading `level`.
    package func factory(identifier: String, level: LogLevelControl) -> @Sendable (String) -> any LogHandler {
        switch self {
        case .journal: { _ in JournalLogHandler(identifier: identifier, level: level) }
        case .console: { label in ConsoleLogHandler(label: label, level: level) }
        }
    }
}
