import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCLogging
import RPCTestSupport
import Synchronization
import XCTest

/// Which calls the router logs (`RPCCallLogPolicy`): failures and slow calls always, others only with
/// `LogCalls=`.
final class CallLoggingTests: XCTestCase {
    private func entries(
        policy: RPCCallLogPolicy, peerLog: LogRateLimiter? = nil, _ payloads: [String]
    ) throws -> [CapturedEntry] {
        let capture = LogCapture()
        let router = RPCRouter(
            registry: try RPCServiceRegistry(services: [SpecService()]),
            parser: RPCEnvelopeParser(maxNestingDepth: 64, maxBatchLength: 16), callLog: policy)
        let logger = Logger(label: "test") { _ in capture.handler() }
        let connection = RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: logger, peerLog: peerLog)
        let loop = EmbeddedEventLoop()
        for payload in payloads {
            router.dispatch(router.parser.parse(ByteBuffer(string: payload)), connection: connection, eventLoop: loop) { _ in }
            loop.run()
        }
        return capture.entries
    }

    func testSuccessfulCallsAreNotLoggedByDefault() throws {
        let logged = try entries(
            policy: RPCCallLogPolicy(logEveryCall: false, slowCallThreshold: .seconds(60)),
            [#"{"jsonrpc":"2.0","method":"spec.sum","params":[1],"id":1}"#])
        XCTAssertEqual(logged, [])
    }

    func testLogCallsLogsEveryCallWithItsFields() throws {
        let logged = try entries(
            policy: RPCCallLogPolicy(logEveryCall: true, slowCallThreshold: nil),
            [#"{"jsonrpc":"2.0","method":"spec.sum","params":[1],"id":7}"#])
        XCTAssertEqual(logged.map(\.message), ["Call completed"])
        XCTAssertEqual(logged.first?.level, .info)
        XCTAssertEqual(logged.first?.metadata[LogField.method], "spec.sum")
        XCTAssertEqual(logged.first?.metadata[LogField.service], "spec")
        XCTAssertEqual(logged.first?.metadata[LogField.callID], "7")
        XCTAssertNotNil(logged.first?.metadata[LogField.durationMicroseconds])
    }

    func testFailuresAreLoggedWhateverLogCallsSays() throws {
        let logged = try entries(
            policy: RPCCallLogPolicy(logEveryCall: false, slowCallThreshold: nil),
            [#"{"jsonrpc":"2.0","method":"spec.subtract","params":[],"id":1}"#,
             #"{"jsonrpc":"2.0","method":"spec.explode","id":2}"#])
        XCTAssertEqual(logged.map(\.message), ["Call failed", "Call failed with an internal error"])
        XCTAssertEqual(logged.map(\.level), [.info, .error])
        XCTAssertEqual(logged.first?.metadata[LogField.errorCode], "-32602")
    }

    /// A peer can make calls fail at will: what they log is limited per peer (issue 14, logs as a weapon), and
    /// the first entry after the limit says how many were dropped.
    func testFailuresArePerPeerRateLimited() throws {
        let limiter = LogRateLimiter(burst: 3, per: .seconds(3600))
        let failing = #"{"jsonrpc":"2.0","method":"spec.subtract","params":[],"id":1}"#
        let logged = try entries(
            policy: RPCCallLogPolicy(logEveryCall: false, slowCallThreshold: nil), peerLog: limiter,
            Array(repeating: failing, count: 50))
        XCTAssertEqual(logged.map(\.message), ["Call failed", "Call failed", "Call failed"])
        XCTAssertNil(limiter.admit(), "47 suppressed, still within the window")
    }

    /// A client's id can be as long as a frame; the log keeps 128 bytes of it (issue 14, logs as a weapon).
    func testClientSuppliedIdsAreCutInTheLog() throws {
        let id = String(repeating: "x", count: 100_000)
        let logged = try entries(
            policy: RPCCallLogPolicy(logEveryCall: false, slowCallThreshold: nil),
            [#"{"jsonrpc":"2.0","method":"spec.explode","id":"\#(id)"}"#])
        let text = "\(logged.first?.metadata[LogField.callID] ?? "")"
        XCTAssertLessThanOrEqual(text.utf8.count, 160)
        XCTAssertTrue(text.hasSuffix("… (100002 bytes)"), text)
    }

    func testSlowCallsAreLoggedAsWarnings() throws {
        // Any call takes longer than a nanosecond.
        let logged = try entries(
            policy: RPCCallLogPolicy(logEveryCall: false, slowCallThreshold: .nanoseconds(1)),
            [#"{"jsonrpc":"2.0","method":"spec.sum","params":[1],"id":1}"#])
        XCTAssertEqual(logged.map(\.message), ["Slow call"])
        XCTAssertEqual(logged.first?.level, .warning)
    }

    func testInternalErrorsBecomeTheLastError() throws {
        let statistics = RPCStatistics()
        XCTAssertNil(statistics.lastError)
        let router = RPCRouter(
            registry: try RPCServiceRegistry(services: [SpecService()]),
            parser: RPCEnvelopeParser(maxNestingDepth: 64, maxBatchLength: 16), statistics: statistics)
        let loop = EmbeddedEventLoop()
        router.dispatch(
            router.parser.parse(ByteBuffer(string: #"{"jsonrpc":"2.0","method":"spec.explode","id":2}"#)),
            connection: RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "test")), eventLoop: loop) { _ in }
        loop.run()
        XCTAssertEqual(statistics.lastError?.hasPrefix("spec.explode: "), true, statistics.lastError ?? "nil")
    }

    func testLogLevelControlIsSharedByEveryReader() {
        let control = LogLevelControl(.notice)
        XCTAssertEqual(control.level, .notice)
        for level in Logger.Level.allCases {
            control.level = level
            XCTAssertEqual(control.level, level)
        }
    }
}
