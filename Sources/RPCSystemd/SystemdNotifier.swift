#if canImport(Glibc)
import Glibc
#endif
import CSystemd

/// Sends notifications with libsystemd's `sd_notify`, to the socket in `$NOTIFY_SOCKET`.
///
/// The environment is left as it is (`unset_environment` = 0): children the daemon might start must not
/// inherit it, but rpcd starts none, and keeping it lets every later notification find the socket.
package struct SystemdNotifier: ServiceNotifier {
    package init() {}

    /// Whether a service manager listens, i.e. `sd_notify` would send.
    package static var isSupervised: Bool {
        guard let socket = getenv("NOTIFY_SOCKET") else { return false }
        return socket.pointee != 0
    }

    package func send(_ fields: [NotifyField]) -> NotifyResult {
        let message = fields.map(\.line).joined(separator: "\n")
        let result = sd_notify(0, message)
        if result > 0 { return .sent }
        if result == 0 { return .notSupervised }
        return .failed(SystemdError("sd_notify", errno: -result))
    }
}
