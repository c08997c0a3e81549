import JSONRPC
import Logging
import NIOCore
import NIOPosix
import RPCProtocol
import RPCCore
import RPCLogging
import RPCMetrics
import RPCServer
import RPCWire

#if canImport(Glibc)
import Glibc
#endif

/// rpcd's connection pipeline on a real NIO socket channel, with its event loop on a thread of its own, as
/// the server runs one: the calling thread writes `calls` pipelined `rpcd.ping` frames into the other end of a
/// Unix socket pair and reads until every reply is back. Unlike `PingPipeline` (an `EmbeddedChannel`), a
/// round trip here costs what it costs rpcd in user space at 1 × 1 or 50 × 1: the event loop's wake-up, the
/// read, the pipeline, the write and flush through NIO's pending writes, the loop going back to sleep. The
/// calling thread's share (a `write` and `read`s) is small and the same for every version of rpcd; the
/// kernel's is not counted.
final class SocketPing {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let peer: Int32
    private let burst: [UInt8]
    private let replyBytes: Int
    private var input = [UInt8](repeating: 0, count: 65536)

    init(calls: Int, idleTimeout: Bool = true) throws {
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { throw IOError(errnoCode: errno, reason: "socketpair") }
        peer = pair[1]
        let statistics = RPCStatistics(metrics: RPCMetrics(enabled: false))
        let router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [DaemonService(state: RPCServerState(), statistics: statistics)], metrics: statistics.metrics),
            parser: RPCEnvelopeParser(), statistics: statistics)
        var limits = ConnectionLimits()
        if !idleTimeout { limits.idleTimeout = nil }
        let configuration = RPCServer.Configuration(listen: [], limits: limits)
        let ledger = PeerLedger(limits: configuration.limits, administrators: RPCPeerSet([]), statistics: statistics)
        let connection = RPCConnectionInfo(
            id: 1, peer: .unixSocket(), logger: Logger(label: "microbench"), peerLog: nil,
            account: ledger.open(.unixSocket())!, listener: nil)
        _ = try ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(ConnectionPipeline.handlers(
                        configuration: configuration, router: router, connection: connection, refusalLog: LogRateLimiter()))
                }
            }
            .withConnectedSocket(pair[0]).wait()
        var burst = ByteBuffer()
        for id in 1...calls { burst.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":\#(id)}"#) }
        self.burst = Array(burst.readableBytesView)
        // Each reply: a 4-byte length and {"jsonrpc":"2.0","result":"pong","id":N}.
        replyBytes = (1...calls).reduce(0) { $0 + 4 + 39 + String($1).utf8.count }
    }

    /// One burst written, every reply read back; the bytes read.
    func run() throws -> Int {
        let sent = burst.withUnsafeBytes { write(peer, $0.baseAddress, $0.count) }
        guard sent == burst.count else { throw IOError(errnoCode: errno, reason: "write") }
        var received = 0
        while received < replyBytes {
            let count = input.withUnsafeMutableBytes { read(peer, $0.baseAddress, $0.count) }
            guard count > 0 else { throw IOError(errnoCode: errno, reason: "read") }
            received += count
        }
        guard received == replyBytes else { throw IOError(errnoCode: EPROTO, reason: "replies of \(received) bytes, not \(replyBytes)") }
        return received
    }
}
