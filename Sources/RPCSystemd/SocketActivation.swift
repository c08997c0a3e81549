import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A listening socket systemd passed to rpcd (socket activation, `rpcd.socket`).
package struct ActivatedSocket: Equatable, Sendable {
    /// The file descriptor, 3 and up.
    package var descriptor: Int32
    /// `FileDescriptorName=` of the socket unit, by default the unit's name (`rpcd.socket`).
    package var name: String

    package init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
    }
}

/// Taking over the sockets systemd opened for rpcd (`sd_listen_fds_with_names(3)`).
package enum SocketActivation {
    /// The sockets passed in `$LISTEN_FDS` for this process (`$LISTEN_PID`), or none when not socket
    /// activated. Unsets the `LISTEN_*` variables, so they are taken once. Every one must be a listening
    /// stream socket (`ListenStream=`), else this throws naming the descriptor.
    package static func takeListeningSockets() throws(ActivationError) -> [ActivatedSocket] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        let count = sd_listen_fds_with_names(1, &names)
        defer {
            if let names {
                for index in 0..<Int(max(count, 0)) { free(names[index]) }
                free(names)
            }
        }
        guard count >= 0 else { throw ActivationError(message: "\(SystemdError("sd_listen_fds_with_names", errno: -count))") }
        var sockets: [ActivatedSocket] = []
        for index in 0..<Int(count) {
            let descriptor = rpcd_sd_listen_fds_start() + Int32(index)
            let name = names?[index].map { String(cString: $0) } ?? "unknown"
            let kind = sd_is_socket(descriptor, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), 1)
            guard kind > 0 else {
                let reason = kind < 0 ? "\(SystemdError("sd_is_socket", errno: -kind))" : "it is not a listening stream socket"
                throw ActivationError(
                    message: "file descriptor \(descriptor) ('\(name)') passed by systemd cannot be served: \(reason); rpcd.socket must use ListenStream=")
            }
            sockets.append(ActivatedSocket(descriptor: descriptor, name: name))
        }
        return sockets
    }
}

/// The sockets systemd passed cannot be used.
package struct ActivationError: Error, CustomStringConvertible, Sendable {
    package var message: String
    package var description: String { message }
}
