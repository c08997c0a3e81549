import NIOCore
import RPCCore

#if canImport(Glibc)
import Glibc
#endif

extension RPCPeer {
    /// The peer of a freshly accepted connection: its address, and for a Unix-socket peer the credentials the
    /// kernel recorded when it connected (`SO_PEERCRED`) with every group of that user. Runs on the channel's
    /// loop; looking groups up reads the user database (`/etc/group`, through NSS), once per Unix connection.
    static func of(_ channel: any Channel) -> EventLoopFuture<RPCPeer> {
        switch channel.remoteAddress {
        case .v4(let address)?:
            return channel.eventLoop.makeSucceededFuture(.ip(address.host, port: channel.remoteAddress?.port ?? 0))
        case .v6(let address)?:
            return channel.eventLoop.makeSucceededFuture(.ip(address.host, port: channel.remoteAddress?.port ?? 0))
        case .unixDomainSocket?, nil:
            guard let provider = channel as? any SocketOptionProvider else {
                return channel.eventLoop.makeSucceededFuture(.unixSocket())
            }
            let credentials: EventLoopFuture<KernelCredentials> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
            return credentials.map { peer in
                .unixSocket(
                    Credentials(uid: peer.uid, gid: peer.gid, pid: peer.pid, groups: groups(of: peer.uid, primary: peer.gid)))
            }.recover { _ in .unixSocket() }
        }
    }

    /// `struct ucred` of <sys/socket.h>, which Glibc's Swift module leaves out (it needs `_GNU_SOURCE`).
    private struct KernelCredentials: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// The primary group and every supplementary group of `uid`; just the primary one when the user database
    /// does not know the user (as for ids from outside a user namespace).
    private static func groups(of uid: uid_t, primary: gid_t) -> [UInt32] {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else {
            return [primary]
        }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, primary, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, primary, &groups, &count) >= 0 else { return [primary] }
        }
        return Array(groups.prefix(Int(count)))
    }
}
