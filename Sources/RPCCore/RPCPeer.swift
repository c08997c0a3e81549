import RPCProtocol

/// Who is at the other end of a connection, as far as rpcd can tell: what access rules match, and what logs
/// name (`rpcd_peer`).
///
/// Filled in by the server when it accepts the connection (address; for Unix sockets, the kernel's
/// `SO_PEERCRED`), and once a TLS handshake has verified a client certificate, its identities.
package struct RPCPeer: Sendable, Hashable, CustomStringConvertible {
    package enum Address: Sendable, Hashable {
        /// A TCP peer: its numeric IPv4 or IPv6 address and port.
        case ip(String, port: Int)
        /// A peer on a Unix-domain socket, which has no address.
        case unixSocket
    }

    /// The credentials the kernel recorded for a Unix-socket peer when it connected. In a user namespace
    /// (systemd's `PrivateUsers=`), ids from outside it read as the overflow id 65534.
    package struct Credentials: Sendable, Hashable {
        package var uid: UInt32
        package var gid: UInt32
        package var pid: Int32
        /// Every group of `uid` (its primary group and its supplementary ones), by id.
        package var groups: [UInt32]

        package init(uid: UInt32, gid: UInt32, pid: Int32, groups: [UInt32] = []) {
            self.uid = uid
            self.gid = gid
            self.pid = pid
            self.groups = groups
        }
    }

    package var address: Address {
        didSet { addressBytes = Self.bytes(of: address) }
    }
    /// A TCP peer's address as bytes, parsed once for the access rules' network matches.
    package private(set) var addressBytes: [UInt8]?
    package var credentials: Credentials?
    /// The identities of a verified TLS client certificate (subject common name, DNS and e-mail
    /// subject alternative names); empty for plain connections and clients without a certificate.
    package var certificateIdentities: [String]

    package init(address: Address, credentials: Credentials? = nil, certificateIdentities: [String] = []) {
        self.address = address
        self.addressBytes = Self.bytes(of: address)
        self.credentials = credentials
        self.certificateIdentities = certificateIdentities
    }

    private static func bytes(of address: Address) -> [UInt8]? {
        guard case .ip(let text, _) = address else { return nil }
        return RPCNetwork.addressBytes(text)
    }

    /// A Unix-socket peer.
    package static func unixSocket(_ credentials: Credentials? = nil) -> RPCPeer {
        RPCPeer(address: .unixSocket, credentials: credentials)
    }

    /// A TCP peer.
    package static func ip(_ address: String, port: Int) -> RPCPeer {
        RPCPeer(address: .ip(address, port: port))
    }

    /// `ADDRESS:PORT` for IPv4, `[ADDRESS]:PORT` for IPv6, `unix` for Unix-socket peers.
    package var description: String {
        switch address {
        case .ip(let ip, let port): ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
        case .unixSocket: "unix"
        }
    }

    /// On this host: a Unix-socket peer, or a TCP peer from a loopback address (127.0.0.0/8, ::1, or
    /// ::ffff:127.0.0.0/104). A module host that connects back (its user is one of `ModuleHostUsers`) is not
    /// local: it has no rights unless a rule names its user.
    package var isLocal: Bool {
        switch address {
        case .unixSocket: return !(credentials.map { ModuleHostUsers.ids.contains($0.uid) } ?? false)
        case .ip(let ip, _):
            return ip == "::1" || ip.hasPrefix("127.") || ip.lowercased().hasPrefix("::ffff:127.")
        }
    }
}
