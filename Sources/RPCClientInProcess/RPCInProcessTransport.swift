import JSONRPC
package import Logging
package import NIOCore
package import RPCClient
package import RPCCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A client transport straight to an `RPCRouter` in the same process: no socket, no port, no framing. Each
/// connection is one `RPCConnectionInfo` to the router, as a socket connection is, so calls are routed,
/// checked against the access rules (as `peer`), cancelled (`rpc.cancel`, or the connection closing) and
/// answered exactly as over the wire; only the socket's own limits (frame size, in-flight calls, idle time)
/// do not apply. For rpcd's tests of clients, typed proxies and modules that need no process and no port.
///
/// A target of its own so that `RPCClient` does not link the router; `package`, not a product, because only
/// rpcd's own targets can build an `RPCRouter` (RPCCore is internal).
package struct RPCInProcessTransport: RPCClientTransport {
    package let router: RPCRouter
    /// Who the router sees calling: by default this process, as over a Unix socket.
    package let peer: RPCPeer
    package let logger: Logger
    package let name: String

    private static let connectionIDs = Atomic<UInt64>(0)

    package init(
        router: RPCRouter, peer: RPCPeer = .unixSocket(.init(uid: getuid(), gid: getgid(), pid: getpid())),
        name: String = "in-process", logger: Logger = Logger(label: "rpcd.in-process")
    ) {
        self.router = router
        self.peer = peer
        self.name = name
        self.logger = logger
    }

    package func connect(
        on loop: any EventLoop, timeout: Duration, clientHandlers: @escaping @Sendable () -> [any ChannelHandler]
    ) async throws(RPCClientError) -> any Channel {
        let router = self.router
        let connection = RPCConnectionInfo(
            id: Self.connectionIDs.wrappingAdd(1, ordering: .relaxed).newValue, peer: peer, logger: logger)
        do {
            return try await loop.submit { () throws -> any Channel in
                let channel = InProcessChannel(
                    eventLoop: loop,
                    deliver: { frame, channel in
                        router.dispatch(router.parser.parse(frame), connection: connection, eventLoop: loop) { reply in
                            if let reply { channel.receive(reply) }
                        }
                    },
                    onClose: { connection.inFlight.cancelAll() })
                try channel.pipeline.syncOperations.addHandlers(clientHandlers())
                channel.registerAlreadyConfigured0(promise: nil)
                return channel
            }.get()
        } catch {
            throw .connectFailed(endpoint: name, reason: "\(error)")
        }
    }
}
