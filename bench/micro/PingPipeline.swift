import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCLogging
import RPCMetrics
import RPCProtocol
import RPCServer
import RPCWire

/// rpcd's per-connection pipeline (`ConnectionPipeline`: frame receiver, connection handler, protocol errors)
/// on an `EmbeddedChannel`, with the built-in services and a peer account in a ledger, as the server installs
/// it: one read holding `calls` pipelined `rpcd.ping` frames goes in, and its replies come out. What one call
/// costs rpcd in user space from the bytes read to the reply written, without the socket's system calls.
/// With `metrics`, as rpcd runs by default: the registry resolves each method's series and the connection
/// counts its bytes in its listener's (`Metrics=no` is the other case).
final class PingPipeline {
    private let channel = EmbeddedChannel()
    private let burst: ByteBuffer

    init(calls: Int, metrics: Bool) throws {
        let statistics = RPCStatistics(metrics: RPCMetrics(enabled: metrics))
        let router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [DaemonService(state: RPCServerState(), statistics: statistics)], metrics: statistics.metrics),
            parser: RPCEnvelopeParser(), statistics: statistics)
        let configuration = RPCServer.Configuration(listen: [])
        let ledger = PeerLedger(limits: configuration.limits, administrators: RPCPeerSet([]), statistics: statistics)
        let connection = RPCConnectionInfo(
            id: 1, peer: .unixSocket(), logger: Logger(label: "microbench"), peerLog: nil, account: ledger.open(.unixSocket())!,
            listener: metrics ? statistics.metrics.listener("/run/rpcd/rpcd.sock", tls: false) : nil)
        try channel.pipeline.syncOperations.addHandlers(ConnectionPipeline.handlers(
            configuration: configuration, router: router, connection: connection, refusalLog: LogRateLimiter()))
        var burst = ByteBuffer()
        for id in 1...calls { burst.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":\#(id)}"#) }
        self.burst = burst
    }

    /// One read burst in, every reply out; the bytes written.
    func run() throws -> Int {
        try channel.writeInbound(burst)
        var written = 0
        while let reply = try channel.readOutbound(as: ByteBuffer.self) { written += reply.readableBytes }
        return written
    }
}
