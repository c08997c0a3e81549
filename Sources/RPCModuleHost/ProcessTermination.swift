#if canImport(Glibc)
import Glibc
#endif

/// How a child process ended (a module host, a command method's command), as `waitid` reported it.
package enum ProcessTermination: Equatable, Sendable, CustomStringConvertible {
    case exited(code: Int32)
    case signalled(Int32)

    /// `SIGSEGV`, `SIGKILL`, ... for a signal; `exit 3` for an exit.
    package var description: String {
        switch self {
        case .exited(let code): "exit \(code)"
        case .signalled(let signal): Self.signalName(signal)
        }
    }

    /// The signal's name (`SIGSEGV`); `nil` for an exit.
    package var signalName: String? {
        if case .signalled(let signal) = self { Self.signalName(signal) } else { nil }
    }

    private static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV",
            SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM", SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ",
            SIGSYS: "SIGSYS",
        ]
        return names[signal] ?? "signal \(signal)"
    }
}
