import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCJSON
import RPCLogging
import RPCMetrics
import RPCProtocol
@testable import RPCServer
import RPCTestSupport
import RPCWire
import XCTest

/// `rpcd.*` is declared and bound like a module's methods: by position or by name, checked against the
/// declared schemas, with the standard -32602 details.
final class DaemonServiceTests: XCTestCase {
    private var channel: EmbeddedChannel!
    private let logLevel = LogLevelControl(.info)

    override func setUpWithError() throws {
        let router = RPCRouter(
            registry: try RPCServiceRegistry(services: [
                RPCDiscoverService(), DaemonService(state: RPCServerState(), statistics: RPCStatistics(), logLevel: logLevel),
            ]),
            parser: RPCEnvelopeParser())
        channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(
            ConnectionPipeline.handlers(
                configuration: RPCServer.Configuration(listen: []), router: router,
                connection: RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "test")),
                refusalLog: LogRateLimiter(burst: 10, per: .seconds(1))))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    }

    override func tearDown() {
        _ = try? channel.finish()
    }

    private func call(_ method: String, _ params: String? = nil) throws -> JSONValue {
        var request = #"{"jsonrpc":"2.0","method":"\#(method)","id":1"#
        if let params { request += #","params":\#(params)"# }
        request += "}"
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: request))
        var bytes = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&part) }
        return try JSONValue(parsing: XCTUnwrap(WireFrame.payloads(in: &bytes).first))
    }

    /// `rpcd.info` lists what `rpc.discover` shows the same caller (issue 21): here a local peer with read-only
    /// rights, to whom `echo` (no read-only method) is hidden, and `rpcd`'s count is of its read-only methods.
    func testInfoListsOnlyTheServicesTheCallerMaySee() throws {
        let router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [RPCDiscoverService(), DaemonService(state: RPCServerState(), statistics: RPCStatistics()), SleepEchoService()],
                access: RPCAccessPolicy(default: RPCAccessRule(allow: [], allowRead: [.local]))),
            parser: RPCEnvelopeParser())
        channel = try PipelineChannel.make(configuration: RPCServer.Configuration(listen: []), router: router)
        let services = try XCTUnwrap(call("rpcd.info")["result"]?["services"]?.arrayValue)
        XCTAssertEqual(services.compactMap { $0["name"]?.stringValue }.sorted(), ["rpc", "rpcd"])
        let discovered = try XCTUnwrap(call("rpc.discover")["result"]?["methods"]?.arrayValue)
        XCTAssertFalse(discovered.contains { $0["name"]?.stringValue?.hasPrefix("echo.") ?? false })
        let rpcd = try XCTUnwrap(services.first { $0["name"] == "rpcd" })
        XCTAssertEqual(rpcd["methods"]?.intValue, discovered.filter { $0["name"]?.stringValue?.hasPrefix("rpcd.") ?? false }.count)
    }

    /// `Metrics=no` exports nothing and times nothing, but `rpcd.info` reports true counts (issue 24): the
    /// counters it reads are kept whatever `Metrics=` says.
    func testInfoCountsCallsWithMetricsOff() throws {
        let statistics = RPCStatistics(metrics: RPCMetrics(enabled: false))
        let router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [RPCDiscoverService(), DaemonService(state: RPCServerState(), statistics: statistics)],
                metrics: statistics.metrics),
            parser: RPCEnvelopeParser(), statistics: statistics)
        channel = try PipelineChannel.make(configuration: RPCServer.Configuration(listen: []), router: router)
        for _ in 0..<3 { XCTAssertEqual(try call("rpcd.ping")["result"], "pong") }
        XCTAssertEqual(try call("nosuch.method")["error"]?["code"], -32601)
        let calls = try XCTUnwrap(call("rpcd.info")["result"]?["calls"])
        // rpcd.info itself is answered at once, never in flight: it is not counted until answered.
        XCTAssertEqual(calls["total"], 4, "three pings and the unknown method")
        XCTAssertEqual(calls["errors"], 1)
        XCTAssertEqual(try call("rpcd.metrics", #"{"format":"prometheus"}"#)["result"], "", "nothing exported")
        let metrics = try XCTUnwrap(call("rpcd.metrics")["result"])
        XCTAssertEqual(metrics["metrics"], false)
        let ping = try XCTUnwrap(metrics["methods"]?.arrayValue?.first { $0["method"] == "ping" })
        XCTAssertEqual(ping["calls"], 3)
        XCTAssertEqual(ping["duration_count"], 0, "no histogram with metrics off")
    }

    /// `rpcd.metrics` names the heaviest peers only to a caller `Allow=` of `rpcd` admits (the administrators);
    /// a caller with read access gets the aggregate figures and no `peers` (docs/SECURITY.md).
    func testMetricsNamePeersOnlyToAdministrators() throws {
        let statistics = RPCStatistics()
        let router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [RPCDiscoverService(), DaemonService(state: RPCServerState(), statistics: statistics)],
                access: RPCAccessPolicy(default: RPCAccessRule(allow: [.user("root")], allowRead: [.local])),
                metrics: statistics.metrics),
            parser: RPCEnvelopeParser(), statistics: statistics)
        let configuration = RPCServer.Configuration(listen: [])
        let ledger = PeerLedger(limits: configuration.limits, administrators: RPCPeerSet([]), statistics: statistics)
        let user = RPCPeer.unixSocket(.init(uid: 1000, gid: 1000, pid: 2))
        let root = RPCPeer.unixSocket(.init(uid: 0, gid: 0, pid: 3))
        channel = try PipelineChannel.make(configuration: configuration, router: router, ledger: ledger, peer: user)
        let seen = try XCTUnwrap(call("rpcd.metrics")["result"])
        XCTAssertNil(seen["peers"], "a local user does not learn who else uses the daemon")
        XCTAssertEqual(seen["budget"]?["peers"], 1)
        XCTAssertNotNil(seen["budget"]?["largest_peer_bytes"]?.intValue)
        let userChannel = channel!
        channel = try PipelineChannel.make(configuration: configuration, router: router, ledger: ledger, peer: root)
        let peers = try XCTUnwrap(call("rpcd.metrics")["result"]?["peers"]?.arrayValue)
        XCTAssertEqual(Set(peers.compactMap { $0["peer"]?.stringValue }), ["uid 1000", "uid 0"])
        _ = try? userChannel.finish()
    }

    func testSetLogLevelByPositionAndByName() throws {
        XCTAssertEqual(try call("rpcd.setLogLevel", #"["debug"]"#)["result"], "info")
        XCTAssertEqual(logLevel.level, .debug)
        XCTAssertEqual(try call("rpcd.setLogLevel", #"{"level":"warning"}"#)["result"], "debug")
        XCTAssertEqual(try call("rpcd.logLevel")["result"], "warning")
    }

    func testSetLogLevelParamsAreCheckedByTheSharedBinder() throws {
        let cases: [(String, String)] = [
            ("[\"loud\"]", #"parameter 'level': must be one of ["trace","debug","info","notice","warning","error","critical"]"#),
            ("[]", "missing parameter 'level'"),
            (#"{"lvl":"debug"}"#, "unknown parameter 'lvl'"),
            (#"["debug", 1]"#, "too many parameters: expected at most 1, got 2"),
            ("[7]", #"parameter 'level': must be one of ["trace","debug","info","notice","warning","error","critical"]"#),
        ]
        for (params, detail) in cases {
            let reply = try call("rpcd.setLogLevel", params)
            XCTAssertEqual(reply["error"]?["code"], .number(-32602), params)
            XCTAssertEqual(reply["error"]?["data"]?["detail"]?.stringValue, detail, params)
        }
        XCTAssertEqual(logLevel.level, .info, "nothing changed")
    }

    func testMethodsWithoutParamsRefuseParams() throws {
        XCTAssertEqual(try call("rpcd.ping")["result"], "pong")
        XCTAssertEqual(try call("rpcd.ping", "[]")["result"], "pong")
        XCTAssertEqual(try call("rpcd.ping", " { \n } ")["result"], "pong")
        XCTAssertEqual(try call("rpcd.ping", "[ ]")["result"], "pong")
        XCTAssertEqual(try call("rpcd.ping", "{}}")["error"]?["code"], -32700, "the frame is checked before the method")
        XCTAssertEqual(try call("rpcd.ping", #"{"":1}"#)["error"]?["data"]?["detail"], "unknown parameter ''")
        XCTAssertEqual(try call("rpcd.ping", "[[]]")["error"]?["data"]?["detail"], "this method takes no parameters")
        XCTAssertEqual(try call("rpcd.ping", "[1]")["error"]?["data"]?["detail"], "this method takes no parameters")
        XCTAssertEqual(try call("rpcd.info", #"{"x":1}"#)["error"]?["data"]?["detail"], "unknown parameter 'x'")
    }

    /// Every built-in method is reached through its declaration, and `rpc.discover` lists them in that order.
    func testEveryDeclaredMethodAnswersItself() throws {
        XCTAssertEqual(DaemonService.methods.map(\.descriptor.name), ["ping", "info", "metrics", "logLevel", "setLogLevel", "reload"])
        XCTAssertNotNil(try call("rpcd.info")["result"]?["uptime_seconds"])
        XCTAssertEqual(try call("rpcd.logLevel")["result"], "info")
        let discover = try call("rpc.discover")["result"]
        let names = discover?["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        XCTAssertEqual(names, ["rpc.discover", "rpc.cancel", "rpc.subscribe", "rpc.unsubscribe", "rpcd.ping", "rpcd.info", "rpcd.metrics", "rpcd.logLevel", "rpcd.setLogLevel", "rpcd.reload"])
    }
}
