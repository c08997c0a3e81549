import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Keeps rpcd's listening sockets in systemd's file descriptor store (`FDSTORE=1`, sd_notify(3)), so that they
/// stay bound and listening while rpcd restarts: `systemctl restart`, a package upgrade (its postinst restarts
/// the unit) and a restart by `Restart=` are each one job, and systemd keeps a service's store for as long as
/// a job is queued for it. Connections that arrive meanwhile wait in the socket's backlog for the next rpcd
/// instead of being refused. The next instance gets the sockets back in `$LISTEN_FDS`, named as stored
/// (`SocketActivation`). A full `systemctl stop` empties the store (systemd 252; 254's
/// `FileDescriptorStorePreserve=` could keep it), so the next start binds afresh.
///
/// Each socket is stored under a name of its own, made from the address it is bound to (`name(forAddress:)`),
/// so that one rpcd.conf no longer names can be removed alone (`FDSTOREREMOVE=1` removes by name). The unit
/// must allow the store (`FileDescriptorStoreMax=`); without it systemd refuses the sockets with a warning in
/// the journal and restarts refuse connections as before.
///
/// Stateless; sends a datagram to `$NOTIFY_SOCKET`, from any thread. Outside systemd every call is
/// `.notSupervised`.
package enum ListenerStore {
    /// What the name of every socket rpcd stores begins with; a passed socket named otherwise is the socket
    /// unit's (`FileDescriptorName=` of rpcd.socket).
    package static let namePrefix = "listen-"

    /// `listen-` and the address, with what `$LISTEN_FDNAMES` cannot carry percent-encoded: `:` (its
    /// separator), `%`, and bytes outside printable ASCII (`listen-127.0.0.1%3A7390`,
    /// `listen-/run/rpcd/rpcd.sock`). At most 255 bytes, systemd's limit.
    package static func name(forAddress address: String) -> String {
        var name = namePrefix
        for byte in address.utf8 {
            if byte > 0x20, byte < 0x7F, byte != UInt8(ascii: ":"), byte != UInt8(ascii: "%") {
                name.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                name.unicodeScalars.append("%")
                name.unicodeScalars.append(hex[Int(byte >> 4)])
                name.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return String(name.utf8.prefix(255))!
    }

    /// Whether a passed socket came from the store (a name `name(forAddress:)` made).
    package static func isStored(_ socket: ActivatedSocket) -> Bool {
        socket.name.hasPrefix(namePrefix)
    }

    /// Stores a duplicate of `descriptor` under `name`. Storing a socket that is in the store already changes
    /// nothing (systemd drops the duplicate).
    @discardableResult
    package static func keep(_ descriptor: Int32, name: String) -> NotifyResult {
        var descriptors = [descriptor]
        return send("FDSTORE=1\nFDNAME=\(name)", descriptors: &descriptors, operation: "sd_pid_notify_with_fds")
    }

    /// Closes systemd's copies of the sockets stored under `name`.
    @discardableResult
    package static func remove(name: String) -> NotifyResult {
        var none: [Int32] = []
        return send("FDSTOREREMOVE=1\nFDNAME=\(name)", descriptors: &none, operation: "sd_notify")
    }

    private static func send(_ message: String, descriptors: inout [Int32], operation: String) -> NotifyResult {
        let result = descriptors.withUnsafeBufferPointer {
            sd_pid_notify_with_fds(0, 0, message, $0.baseAddress, UInt32($0.count))
        }
        if result > 0 { return .sent }
        if result == 0 { return .notSupervised }
        return .failed(SystemdError(operation, errno: -result))
    }
}
