import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCBinding
import RPCCore
import RPCLogging
import RPCMetrics
import RPCProtocol
import RPCServer
import RPCWire

/// rpcd's per-connection pipeline (`ConnectionPipeline`: frame receiver, connection handler, protocol errors)
/// on an `EmbeddedChannel`, with the built-in services and a peer account in a ledger, as the server installs
/// it: one read holding `calls` pipelined `rpcd.ping` frames goes in, and its replies come out. With
/// `webSocket`, the pipeline of a connection upgraded to WebSocket (`WebSocketPipeline`) and the calls in
/// masked text frames, as a browser sends them. What one call
/// costs rpcd in user space from the bytes read to the reply written, without the socket's system calls.
/// With `metrics`, as rpcd runs by default: the registry resolves each method's series and the connection
/// counts its bytes in its listener's (`Metrics=no` is the other case). With `method` `calc.add`, the calls
/// go to `CalcStandIn`, a service answering through `handle` as a module does (the path `calc.add` takes
/// through rpcd, without the module's own share).
final class PingPipeline {
    private let channel = EmbeddedChannel()
    private let burst: ByteBuffer

    init(calls: Int, metrics: Bool, method: String = "rpcd.ping", webSocket: Bool = false) throws {
        let statistics = RPCStatistics(metrics: RPCMetrics(enabled: metrics))
        let router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [DaemonService(state: RPCServerState(), statistics: statistics), CalcStandIn()],
                metrics: statistics.metrics),
            parser: RPCEnvelopeParser(), statistics: statistics)
        let configuration = RPCServer.Configuration(listen: [])
        let ledger = PeerLedger(limits: configuration.limits, administrators: RPCPeerSet([]), statistics: statistics)
        let connection = RPCConnectionInfo(
            id: 1, peer: .unixSocket(), logger: Logger(label: "microbench"), peerLog: nil, account: ledger.open(.unixSocket())!,
            listener: metrics ? statistics.metrics.listener("/run/rpcd/rpcd.sock", tls: false) : nil)
        let handlers = webSocket ? WebSocketPipeline.handlers : ConnectionPipeline.handlers
        try channel.pipeline.syncOperations.addHandlers(handlers(configuration, router, connection, LogRateLimiter()))
        var burst = ByteBuffer()
        let params = method == "calc.add" ? #","params":{"a":1,"b":2}"# : ""
        for id in 1...calls {
            let call = #"{"jsonrpc":"2.0","method":"\#(method)"\#(params),"id":\#(id)}"#
            if webSocket { Self.writeMaskedTextFrame(call, into: &burst) } else { burst.writeLengthPrefixedFrame(call) }
        }
        self.burst = burst
    }

    /// One read burst in, every reply out; the bytes written.
    func run() throws -> Int {
        try channel.writeInbound(burst)
        var written = 0
        while let reply = try channel.readOutbound(as: ByteBuffer.self) { written += reply.readableBytes }
        return written
    }

    /// A client's text frame (RFC 6455 §5.2): FIN, opcode 1, masked, a payload shorter than 126 bytes.
    private static func writeMaskedTextFrame(_ text: String, into buffer: inout ByteBuffer) {
        let payload = Array(text.utf8)
        precondition(payload.count < 126)
        let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        buffer.writeBytes([0x81, 0x80 | UInt8(payload.count)] + mask)
        buffer.writeBytes(payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
    }
}

/// `calc.add` as rpcd sees a module's method: a service that answers through `handle` and its responder (here
/// before `handle` returns, with a result made once), so the call takes the router's path for calls that may
/// answer later: its pending state, the in-flight table's check, the completion.
struct CalcStandIn: RPCService {
    let descriptor = RPCServiceDescriptor(
        name: "calc", version: "1", summary: "calc.add's path through rpcd",
        methods: [RPCMethodDescriptor(name: "add", params: [RPCParam("a"), RPCParam("b")])])
    private let result = ByteBuffer(string: "3")

    func handle(_ call: RPCCall, responder: RPCResponder) {
        responder.succeed(rawJSON: result)
    }
}
