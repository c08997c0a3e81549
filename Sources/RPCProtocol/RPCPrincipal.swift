#if canImport(Glibc)
import Glibc
#endif

/// Whom an access rule names (`Allow=`, `AllowRead=` in rpcd.conf and handler files; docs/CONFIG.md).
///
/// | text | matches |
/// |---|---|
/// | `any` | every peer |
/// | `local` | a peer on this host: any Unix-socket peer, a TCP peer from a loopback address |
/// | `user:NAME` or `user:UID` | a Unix-socket peer running as that user |
/// | `group:NAME` or `group:GID` | a Unix-socket peer in that group (primary or supplementary) |
/// | `ADDRESS` or `ADDRESS/PREFIX` | a TCP peer from that address or network (`192.168.1.0/24`, `fd00::/8`) |
/// | `client:NAME` | a TLS peer whose verified certificate's subject common name is NAME (exactly one) |
/// | `client:dns:NAME`, `client:email:NAME`, `client:uri:NAME` | a TLS peer whose verified certificate has that subject alternative name |
/// | `client:*` | a TLS peer with any certificate the configured client CA verified |
///
/// Users and groups are matched by id, from `SO_PEERCRED`: they can only match Unix-socket peers. Names are
/// looked up when the rules are loaded.
public enum RPCPrincipal: Hashable, Sendable, CustomStringConvertible {
    case anyone
    case local
    case user(String)
    case group(String)
    case network(RPCNetwork)
    case client(String)

    /// The local administrators: root and group `rpcd`. The shipped access rules let them call everything,
    /// and `Administrators=` reserves connections and bytes for them.
    public static let administrators: [RPCPrincipal] = [.user("root"), .group("rpcd")]

    /// The forms, phrased for error messages.
    public static let syntax =
        "any, local, user:NAME, group:NAME, an address or network (192.168.1.0/24, fd00::/8), client:NAME or client:*"

    public init(parsing text: String) throws(RPCPrincipalError) {
        func fail(_ why: String) -> RPCPrincipalError { RPCPrincipalError(text: text, problem: why) }
        switch text {
        case "any": self = .anyone
        case "local": self = .local
        case _ where text.hasPrefix("user:"):
            let name = String(text.dropFirst(5))
            guard !name.isEmpty else { throw fail("no user name after user:") }
            self = .user(name)
        case _ where text.hasPrefix("group:"):
            let name = String(text.dropFirst(6))
            guard !name.isEmpty else { throw fail("no group name after group:") }
            self = .group(name)
        case _ where text.hasPrefix("client:"):
            let name = String(text.dropFirst(7))
            guard !name.isEmpty else { throw fail("no certificate name after client:") }
            self = .client(name)
        default:
            guard let network = RPCNetwork(parsing: text) else { throw fail("not one of the forms") }
            self = .network(network)
        }
    }

    public var description: String {
        switch self {
        case .anyone: "any"
        case .local: "local"
        case .user(let name): "user:\(name)"
        case .group(let name): "group:\(name)"
        case .network(let network): network.description
        case .client(let name): "client:\(name)"
        }
    }
}

/// A principal that does not parse; the description says why and lists the forms.
public struct RPCPrincipalError: Error, Hashable, Sendable, CustomStringConvertible {
    public var text: String
    public var problem: String
    public var description: String { "'\(text)': \(problem); expected \(RPCPrincipal.syntax)" }
}

/// An IPv4 or IPv6 network: an address and how many leading bits must match. IPv4-mapped IPv6 peers
/// (`::ffff:192.0.2.1`, as a dual-stack listener sees IPv4 clients) match IPv4 networks.
public struct RPCNetwork: Hashable, Sendable, CustomStringConvertible {
    /// 4 or 16 bytes, with the bits past the prefix cleared.
    public let bytes: [UInt8]
    public let prefixLength: Int

    /// `192.168.1.0/24`, `10.1.2.3` (a /32), `fd00::/8`, `::1` (a /128). Bits past the prefix must be zero.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = Self.addressBytes(String(parts[0])) else { return nil }
        let width = bytes.count * 8
        var prefix = width
        if parts.count == 2 {
            guard let value = Int(parts[1]), (0...width).contains(value), parts[1].allSatisfy(\.isNumber) else { return nil }
            prefix = value
        }
        guard Self.masked(bytes, prefix) == bytes else { return nil }
        self.bytes = bytes
        self.prefixLength = prefix
    }

    /// Whether the whole network is loopback (inside 127.0.0.0/8, or ::1 itself).
    public var isLoopback: Bool {
        bytes.count == 4 ? prefixLength >= 8 && bytes[0] == 127 : prefixLength == 128 && bytes == [UInt8](repeating: 0, count: 15) + [1]
    }

    /// Whether `address` (numeric IPv4 or IPv6 text) lies in this network.
    public func contains(_ address: String) -> Bool {
        Self.addressBytes(address).map { contains(bytes: $0) } ?? false
    }

    /// Whether an address, as the 4 or 16 bytes `addressBytes(_:)` gives, lies in this network.
    public func contains(bytes address: [UInt8]) -> Bool {
        var peer = address
        if peer.count == 16, bytes.count == 4, peer.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] {
            peer = Array(peer.suffix(4))
        }
        return peer.count == bytes.count && Self.masked(peer, prefixLength) == bytes
    }

    public var description: String {
        let text: String
        if bytes.count == 4 {
            text = bytes.map(String.init).joined(separator: ".")
        } else {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            text = inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)).map { String(cString: $0) } ?? "?"
        }
        return prefixLength == bytes.count * 8 ? text : "\(text)/\(prefixLength)"
    }

    /// The 4 (IPv4) or 16 (IPv6) bytes of a numeric address; nil for anything else.
    public static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func masked(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let keep = max(0, min(8, prefix - index * 8))
            return keep == 8 ? byte : byte & ~(UInt8(0xff) >> keep)
        }
    }
}
