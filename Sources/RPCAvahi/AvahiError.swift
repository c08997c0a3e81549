import CAvahi

/// A libavahi call failed. `description` names the operation and gives Avahi's own message
/// (`avahi_strerror`), e.g. "connecting to avahi-daemon: Daemon not running".
package struct AvahiError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What rpcd was doing, in words.
    package var operation: String
    /// Avahi's error code (`AVAHI_ERR_*`, negative).
    package var code: Int32

    package init(_ operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    /// The error of the client's last failed call.
    init(_ operation: String, client: OpaquePointer?) {
        self.init(operation, code: client.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_FAILURE))
    }

    package var message: String { String(cString: avahi_strerror(code)) }

    package var description: String { "\(operation): \(message)" }

    /// True when avahi-daemon is not there (not running, or its D-Bus is missing).
    package var isDaemonMissing: Bool {
        code == Int32(AVAHI_ERR_NO_DAEMON) || code == Int32(AVAHI_ERR_DISCONNECTED)
    }
}
