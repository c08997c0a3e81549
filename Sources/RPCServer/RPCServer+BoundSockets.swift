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
    /// `rpcd.info` and the log.
    func adopt(_ descriptor: Int32) async throws -> Listener {
        let quiescing = ServerQuiescingHelper(group: group)
        let endpoint = try Self.localEndpoint(of: descriptor)
        var bootstrap = makeBootstrap(quiescing: quiescing, endpoint: endpoint)
        if case .tcp = endpoint {
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
