#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOExtras
import NIOPosix
import RPCProtocol
import RPCWire

/// Serving listening sockets someone else opened: systemd's socket activation hands rpcd descriptors
/// (3 and up) that are bound and listening already. RPCServer knows nothing of systemd; the daemon passes
/// the descriptors in `Configuration.boundSockets`.
extension RPCServer {
    /// Serves a socket that is already bound and listening. Its address is read back from the kernel, for
    /// `rpcd.info` and the log; it is served as HTTP when `Listen=` has that address as `http://` or
    /// `http+unix:` (`servedScheme`), else with rpcd's frames.
    func adopt(_ descriptor: Int32) async throws -> Listener {
        let quiescing = ServerQuiescingHelper(group: group)
        let endpoint = Self.servedScheme(of: try Self.localEndpoint(of: descriptor), listen: configuration.listen)
        var bootstrap = makeBootstrap(quiescing: quiescing, endpoint: endpoint)
        if endpoint.tcpAddress != nil {
            bootstrap = Self.withTCPOptions(bootstrap)
        }
        do {
            let channel = try await bootstrap.withBoundSocket(descriptor).get()
            return Listener(endpoint: endpoint, channel: channel, quiescing: quiescing)
        } catch {
            throw RPCServerError(
                endpoint: endpoint, reason: "cannot serve inherited socket \(descriptor): \(error)",
                errno: (error as? IOError)?.errnoCode)
        }
    }

    /// Serves a kept socket (`Configuration.keptSockets`) as the `Listen=` entry bound to its address says,
    /// scheme and all: the kernel knows no schemes, so a socket kept for `127.0.0.1:7390` serves
    /// `tls://127.0.0.1:7390` after rpcd.conf changed so.
    func adopt(_ descriptor: Int32, as endpoint: RPCEndpoint) async throws -> Listener {
        try requireTLSContext(for: endpoint)
        let quiescing = ServerQuiescingHelper(group: group)
        var bootstrap = makeBootstrap(quiescing: quiescing, endpoint: endpoint)
        if endpoint.tcpAddress != nil {
            bootstrap = Self.withTCPOptions(bootstrap)
        }
        do {
            let channel = try await bootstrap.withBoundSocket(descriptor).get()
            return Listener(endpoint: endpoint, channel: channel, quiescing: quiescing, ownSocket: descriptor)
        } catch {
            throw RPCServerError(
                endpoint: endpoint, reason: "cannot serve kept socket \(descriptor): \(error)", errno: (error as? IOError)?.errnoCode)
        }
    }

    /// Whether a kept socket, bound to `kept` (plain, as the kernel reports it), can serve `endpoint`: the same
    /// Unix socket path, or the same IP address and port (not port 0, which asks for a new one).
    static func sameAddress(_ kept: RPCEndpoint, _ endpoint: RPCEndpoint) -> Bool {
        if let path = endpoint.unixPath { return kept.unixPath == path }
        guard let address = endpoint.socketAddress, address.port != 0 else { return false }
        return kept.socketAddress == address
    }

    /// Whether clients can still reach a kept socket: a Unix socket's file may have been removed meanwhile
    /// (the socket then serves nobody, and a new one is bound in its place); a TCP socket always can.
    static func isReachable(_ kept: RPCEndpoint) -> Bool {
        guard let path = kept.unixPath else { return true }
        var status = stat()
        return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
    }

    /// A new stream socket bound to `address` and listening (close-on-exec, non-blocking, `SO_REUSEADDR`, a
    /// backlog of 1024), as NIO's bind would make it; the caller owns the descriptor.
    static func listeningSocket(at address: SocketAddress) throws -> Int32 {
        let family: Int32
        switch address {
        case .v4: family = AF_INET
        case .v6: family = AF_INET6
        case .unixDomainSocket: family = AF_UNIX
        }
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        var one: Int32 = 1
        let ok = (family == AF_UNIX || setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0)
            && address.withSockAddr({ bind(descriptor, $0, socklen_t($1)) }) == 0
            && listen(descriptor, 1024) == 0
        guard ok else {
            let failure = IOError(errnoCode: errno, reason: "bind")
            close(descriptor)
            throw failure
        }
        return descriptor
    }

    /// Removes a socket file left at `path` by an earlier run, as NIO's `cleanupExistingSocketFile` does; any
    /// other kind of file stays, and binding then fails naming it.
    static func removeStaleSocketFile(at path: String) throws {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFSOCK else { return }
        guard unlink(path) == 0 || errno == ENOENT else { throw IOError(errnoCode: errno, reason: "unlink \(path)") }
    }

    /// A passed socket's endpoint (plain `.tcp` or `.unix`, as the kernel reports it) as the `Listen=` entry
    /// with its address says to serve it: `http://` or `http+unix:` makes it an HTTP listener. The kernel
    /// knows no schemes, so rpcd.socket's `ListenStream=127.0.0.1:7380` serves HTTP beside
    /// `Listen=http://127.0.0.1:7380` in rpcd.conf, as rpcd would without the socket unit.
    static func servedScheme(of adopted: RPCEndpoint, listen: [RPCEndpoint]) -> RPCEndpoint {
        switch adopted {
        case .unix(let path) where listen.contains(.httpUnix(path: path)):
            return .httpUnix(path: path)
        case .tcp(let host, let port):
            let address = adopted.socketAddress
            let http = listen.first { if case .http = $0 { $0.socketAddress == address } else { false } }
            return http == nil ? adopted : .http(host: host, port: port)
        default:
            return adopted
        }
    }

    /// Which `Listen=` endpoints to bind, given the sockets already `adopted` (as the kernel reports them:
    /// plain `.tcp` or `.unix`), and which not, because a socket serves their address anyway: a passed socket
    /// with the same address, or a wildcard listener (`0.0.0.0:P`, `[::]:P`) of the same family, port and
    /// scheme. Binding those would fail (the address is in use); skipping them makes rpcd.conf's `Listen=` mean
    /// the same with or without rpcd.socket, and lets an administrator add `Listen=0.0.0.0:7390` beside the
    /// shipped `Listen=127.0.0.1:7390`. Throws for a `tls://` address a passed (plain) socket holds.
    static func plan(listen: [RPCEndpoint], adopted: [RPCEndpoint]) throws -> (bind: [RPCEndpoint], covered: [RPCEndpoint]) {
        var bind: [RPCEndpoint] = []
        var covered: [RPCEndpoint] = []
        let adoptedAddresses = adopted.compactMap(\.socketAddress)
        let wildcards = listen.filter(\.isWildcard)
        for endpoint in listen {
            if endpoint.unixPath != nil {
                if adopted.contains(endpoint) {
                    covered.append(endpoint)
                } else if !bind.contains(endpoint) {
                    bind.append(endpoint)
                }
                continue
            }
            guard let address = endpoint.socketAddress, address.port != 0 else {
                bind.append(endpoint)
                continue
            }
            if adoptedAddresses.contains(address) {
                guard !endpoint.isTLS else {
                    throw RPCServerError(
                        endpoint: endpoint,
                        reason: "a socket systemd passed (rpcd.socket) holds this address and serves plain TCP; "
                            + "remove the address from the socket unit or from Listen=",
                        errno: EADDRINUSE)
                }
                covered.append(endpoint)
            } else if !endpoint.isWildcard, wildcards.contains(where: { $0.covers(endpoint) }) {
                covered.append(endpoint)
            } else if !bind.contains(endpoint) {
                bind.append(endpoint)
            }
        }
        return (bind, covered)
    }

    /// The address a listening socket is bound to, as an endpoint.
    static func localEndpoint(of descriptor: Int32) throws -> RPCEndpoint {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else {
            throw RPCServerError(
                endpoint: .unix(path: "fd:\(descriptor)"), reason: "getsockname failed: \(String(cString: strerror(errno)))", errno: errno)
        }
        let address: SocketAddress
        switch Int32(storage.ss_family) {
        case AF_INET:
            address = withUnsafeBytes(of: storage) { SocketAddress($0.load(as: sockaddr_in.self), host: "") }
        case AF_INET6:
            address = withUnsafeBytes(of: storage) { SocketAddress($0.load(as: sockaddr_in6.self), host: "") }
        case AF_UNIX:
            address = withUnsafeBytes(of: storage) { SocketAddress($0.load(as: sockaddr_un.self)) }
        default:
            throw RPCServerError(
                endpoint: .unix(path: "fd:\(descriptor)"), reason: "unsupported address family \(storage.ss_family)", errno: EAFNOSUPPORT)
        }
        if case .unixDomainSocket = address {
            return .unix(path: address.pathname ?? "")
        }
        return .tcp(host: address.ipAddress ?? "", port: address.port ?? 0)
    }
}

extension RPCEndpoint {
    /// The IP address and port of a TCP or TLS endpoint, compared as addresses (so that the spellings of one
    /// IPv6 address match); nil for a Unix socket.
    fileprivate var socketAddress: SocketAddress? {
        tcpAddress.flatMap { try? SocketAddress(ipAddress: $0.host, port: $0.port) }
    }

    /// `0.0.0.0:P` or `[::]:P`: every address of its family.
    fileprivate var isWildcard: Bool {
        guard let address = socketAddress else { return false }
        switch address {
        case .v4(let v4): return v4.address.sin_addr.s_addr == INADDR_ANY
        case .v6(let v6): return withUnsafeBytes(of: v6.address.sin6_addr) { $0.allSatisfy { $0 == 0 } }
        case .unixDomainSocket: return false
        }
    }

    /// Whether this wildcard endpoint receives `other`'s connections: same family, port and scheme.
    fileprivate func covers(_ other: RPCEndpoint) -> Bool {
        guard isWildcard, isTLS == other.isTLS, isHTTP == other.isHTTP, let mine = socketAddress, let theirs = other.socketAddress else { return false }
        return mine.protocol == theirs.protocol && mine.port == theirs.port
    }
}
