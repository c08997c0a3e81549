import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import RPCCore
import RPCJSON
import RPCLogging
import RPCMetrics
import RPCModuleHost
import RPCModules
import RPCProtocol
import RPCServer
import RPCWire

#if canImport(Glibc)
import Glibc
#endif

/// `calc.add` (or another shipped module's method) isolated, as rpcd serves it by default: rpcd's connection pipeline (`ConnectionPipeline`, on an
/// `EmbeddedChannel`) routes the calls of one read to the shipped calc module through the real supervisor
/// (`HandlerSet` with `Isolation=process`, as rpcd starts it without root: no cgroup) and a real
/// `rpcd-module-host` process, and their answers come back over the link into the connection, which writes its
/// replies. The connection lives on the link's event loop, the one loop rpcd has on the bench's one core, so
/// answers reach it as they do there. What one call costs both processes, system calls and wake-ups included
/// (bench/micro.sh counts the host's instructions too, and adds them up).
final class IsolatedPipeline: @unchecked Sendable {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let pool = WorkerPool(threads: 2)
    private let handlers: HandlerSet
    private let loop: any EventLoop
    private let burst: ByteBuffer
    /// Built on `loop`'s thread, and only touched there (an `EmbeddedEventLoop` belongs to its thread).
    private let connection = ConnectionBox()
    private let replies: ReplyCounter
    /// The module host's process, to wait for its end (its instructions are counted when it exits); 0 when the
    /// module runs in this process (`isolated: false`).
    let hostPID: Int32

    /// `calls` calls of `method` with `params` (JSON text) to the shipped `module`, each a `handler`; `hostExecutable`
    /// is `rpcd-module-host`, `modules` a directory holding the module's library. The method's result is
    /// `result` (JSON text), or its params when nil (an echo). `isolated: false` runs the module in this process
    /// (`Isolation=none`), the reference the isolated path is measured against.
    init(
        calls: Int, module: String = "calc", method: String = "calc.add", params: String = #"{"a":1,"b":2}"#,
        result: String? = "3", isolated: Bool = true, hostExecutable: String, modules: String
    ) throws {
        var template = Array("/tmp/rpcd-microbench-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw RPCBenchError("mkdtemp failed") }
        let directory = String(cString: made)
        let file = fopen(directory + "/calc.conf", "w")
        fputs("[Handler]\nModule=\(module)\n" + (isolated ? "" : "Isolation=none\n"), file)
        fclose(file)
        loop = group.next()
        let statistics = RPCStatistics(metrics: RPCMetrics(enabled: true))
        handlers = HandlerSet(
            directories: HandlerDirectories(directories: [directory]), moduleDirectories: ModuleDirectories([modules]),
            stateRoot: directory, reservedServices: ["rpcd"], pool: pool, logger: Logger(label: "microbench"),
            group: group, hostExecutable: hostExecutable)
        let generation = try handlers.prepare(strict: false)
        guard generation.problems.isEmpty, !generation.services.isEmpty else {
            throw RPCBenchError("\(module) did not start: \(generation.problems)")
        }
        handlers.commit(generation)
        hostPID = Int32(generation.services.compactMap { ($0 as? IsolatedModuleService)?.status["pid"]?.intValue }.first ?? 0)
        let router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [DaemonService(state: RPCServerState(), statistics: statistics)] + generation.services,
                metrics: statistics.metrics),
            parser: RPCEnvelopeParser(), statistics: statistics, events: handlers.events)
        var burst = ByteBuffer()
        var expected = 0
        for id in 1...calls {
            burst.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"\#(method)","params":\#(params),"id":\#(id)}"#)
            expected += 4 + #"{"jsonrpc":"2.0","result":\#(result ?? params),"id":\#(id)}"#.utf8.count
        }
        self.burst = burst
        replies = ReplyCounter(expected: expected)
        try loop.submit { [replies, connection = self.connection] in
            let channel = EmbeddedChannel()
            let configuration = RPCServer.Configuration(listen: [])
            let ledger = PeerLedger(limits: configuration.limits, administrators: RPCPeerSet([]), statistics: statistics)
            let info = RPCConnectionInfo(
                id: 1, peer: .unixSocket(), logger: Logger(label: "microbench"), peerLog: nil,
                account: ledger.open(.unixSocket())!,
                listener: statistics.metrics.listener("/run/rpcd/rpcd.sock", tls: false))
            try channel.pipeline.syncOperations.addHandler(replies)
            let handlers = ConnectionPipeline.handlers
            try channel.pipeline.syncOperations.addHandlers(handlers(configuration, router, info, LogRateLimiter()))
            connection.channel = channel
        }.wait()
    }

    /// `iterations` read bursts in, one after the other's replies are all out; the bytes written.
    func run(iterations: Int) throws -> Int {
        guard iterations > 0 else { return 0 }
        let done = loop.makePromise(of: Int.self)
        try loop.submit { [self] in
            var left = iterations
            var written = 0
            replies.whenAllOut = { [self] bytes in
                written += bytes
                left -= 1
                // The next burst after this one's last reply has been flushed, as a client's next read would be.
                if left == 0 { return done.succeed(written) }
                loop.execute { _ = try? self.connection.channel?.writeInbound(self.burst) }
            }
            try connection.channel?.writeInbound(burst)
        }.wait()
        return try done.futureResult.wait()
    }

    /// Retires the host and waits until it has ended.
    func stop() {
        handlers.retireAll()
        var tries = 0
        while hostPID > 0, kill(hostPID, 0) == 0, tries < 2000 {
            usleep(10_000)
            tries += 1
        }
    }
}

private final class ConnectionBox: @unchecked Sendable {
    var channel: EmbeddedChannel?
}

/// The connection's socket: takes its writes, and says when a burst's replies (`expected` bytes) are out.
private final class ReplyCounter: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = ByteBuffer
    let expected: Int
    private var bytes = 0
    var whenAllOut: ((Int) -> Void)?

    init(expected: Int) {
        self.expected = expected
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        bytes += unwrapOutboundIn(data).readableBytes
        promise?.succeed(())
    }

    func flush(context: ChannelHandlerContext) {
        guard bytes >= expected else { return }
        let out = bytes
        bytes = 0
        whenAllOut?(out)
    }
}

struct RPCBenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
