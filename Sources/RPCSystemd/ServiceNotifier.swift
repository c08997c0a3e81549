#if canImport(Glibc)
import Glibc
#endif

/// Tells the service manager about the daemon's state: the `sd_notify(3)` protocol, one message of
/// `KEY=value` lines at a time. Implementations: `SystemdNotifier` (libsystemd) and `NoNotifier` (not
/// supervised: tests, a terminal). Thread-safe; sending never blocks for long (a datagram to a local socket).
package protocol ServiceNotifier: Sendable {
    /// Sends `fields` as one message.
    func send(_ fields: [NotifyField]) -> NotifyResult
}

/// What happened to a notification, in sd_notify's three honest cases.
package enum NotifyResult: Equatable, Sendable {
    /// The service manager got it.
    case sent
    /// No service manager is listening (`NOTIFY_SOCKET` unset): normal outside systemd, not an error.
    case notSupervised
    /// It could not be sent.
    case failed(SystemdError)
}

/// One line of a notification. The cases are the fields rpcd sends; see sd_notify(3) for their meaning.
package enum NotifyField: Equatable, Sendable {
    case ready
    case reloading
    case stopping
    case watchdog
    /// Free-form status text for `systemctl status`; newlines are replaced, as the protocol is line based.
    case status(String)
    /// The errno the daemon failed with (sent with a status before exiting).
    case errno(Int32)
    /// Asks for this much more time to finish the current start-up, reload or shutdown step.
    case extendTimeout(microseconds: UInt64)
    /// CLOCK_MONOTONIC when a reload began, which systemd 253+ requires with `RELOADING=1`.
    case monotonicTime(microseconds: UInt64)

    /// The `KEY=value` line.
    package var line: String {
        switch self {
        case .ready: "READY=1"
        case .reloading: "RELOADING=1"
        case .stopping: "STOPPING=1"
        case .watchdog: "WATCHDOG=1"
        case .status(let text): "STATUS=" + text.map { $0.isNewline ? " " : String($0) }.joined()
        case .errno(let code): "ERRNO=\(code)"
        case .extendTimeout(let microseconds): "EXTEND_TIMEOUT_USEC=\(microseconds)"
        case .monotonicTime(let microseconds): "MONOTONIC_USEC=\(microseconds)"
        }
    }

    /// `MONOTONIC_USEC=` for now.
    package static func monotonicNow() -> NotifyField {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return .monotonicTime(microseconds: UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)
    }
}

extension ServiceNotifier {
    @discardableResult
    package func send(_ fields: NotifyField...) -> NotifyResult { send(fields) }
}

/// The notifier for runs without a service manager: every message is "not supervised".
package struct NoNotifier: ServiceNotifier {
    package init() {}
    package func send(_ fields: [NotifyField]) -> NotifyResult { .notSupervised }
}
