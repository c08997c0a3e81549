import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCBinding
import RPCCore
import RPCJSON
import RPCMetrics
import RPCProtocol
import XCTest

/// Calls to methods that answer on the spot (`RPCService.answerAtOnce`) come back from `dispatch` as their
/// reply, with no completion made and never counted in flight, timed by the caller's clock; the others run.
final class AnswerAtOnceTests: XCTestCase {
    private struct Service: RPCTypedService {
        static let name = "t"
        static let version = "1"
        static let summary = "Methods answering at once and later"
        static let methods: [RPCServiceMethod<Service>] = [
            .constant("ping", result: RPCParam("pong", schema: ["type": "string"]), json: ByteBuffer(string: #""pong""#)),
            .method("peer", result: RPCParam("peer", schema: ["type": "string"])) { _, call in "\(call.connection.peer)" },
        ]
        let descriptor = Self.makeDescriptor()
    }

    private let loop = EmbeddedEventLoop()
    private let metrics = RPCMetrics()
    private var router: RPCRouter!

    override func setUpWithError() throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(services: [Service(), SpecService()], metrics: metrics), parser: RPCEnvelopeParser(),
            statistics: RPCStatistics(metrics: metrics))
    }

    private func dispatch(_ payload: String, clock: inout NIODeadline, completions: inout Int) -> RPCDispatch {
        router.dispatch(
            router.parser.parse(ByteBuffer(string: payload)), connection: RouterHarness.connection, eventLoop: loop,
            clock: &clock
        ) {
            completions += 1
            return { _ in }
        }
    }

    private func text(_ dispatched: RPCDispatch) -> String? {
        guard case .answered(let reply) = dispatched else { return nil }
        return String(buffer: reply.serialized)
    }

    func testAConstantAndAnImmediateMethodAreAnsweredWithoutACompletion() throws {
        var clock = loop.now
        var completions = 0
        loop.advanceTime(by: .microseconds(20))
        let ping = dispatch(#"{"jsonrpc":"2.0","method":"t.ping","id":1}"#, clock: &clock, completions: &completions)
        XCTAssertEqual(text(ping), #"{"jsonrpc":"2.0","result":"pong","id":1}"#)
        XCTAssertEqual(clock, loop.now, "the clock is read when the call is answered")
        let peer = dispatch(#"{"jsonrpc":"2.0","method":"t.peer","id":2}"#, clock: &clock, completions: &completions)
        XCTAssertEqual(text(peer), #"{"jsonrpc":"2.0","result":"unix","id":2}"#)
        let wrong = dispatch(#"{"jsonrpc":"2.0","method":"t.ping","params":[1],"id":3}"#, clock: &clock, completions: &completions)
        XCTAssertEqual(text(wrong).map { $0.contains("-32602") }, true)
        let notification = dispatch(#"{"jsonrpc":"2.0","method":"t.ping"}"#, clock: &clock, completions: &completions)
        guard case .nothingToSend = notification else { return XCTFail("a notification has nothing to answer") }
        XCTAssertEqual(completions, 0)

        let snapshot = metrics.snapshot()
        let pings = try XCTUnwrap(snapshot.methods.first { $0.service == "t" && $0.method == "ping" })
        XCTAssertEqual(pings.calls("ok"), 2)
        XCTAssertEqual(pings.calls("-32602"), 1)
        XCTAssertEqual(pings.duration?.count, 3)
        // Timed from the clock the caller passed: the first ping took the 20 µs that passed before it.
        XCTAssertEqual(pings.duration?.buckets.first { $0.bound == 0.00001 }?.count, 2)
        XCTAssertEqual(snapshot.callsInFlight, 0)
    }

    /// A service that answers through `handle` only (a module's) gets a completion, even when it answers
    /// before `handle` returns.
    func testAServiceWithoutAnswersAtOnceRunsWithItsCompletion() {
        var clock = loop.now
        var completions = 0
        let sum = dispatch(#"{"jsonrpc":"2.0","method":"spec.sum","params":[1,2],"id":1}"#, clock: &clock, completions: &completions)
        guard case .running = sum else { return XCTFail("it runs") }
        XCTAssertEqual(completions, 1)
        let snapshot = metrics.snapshot()
        XCTAssertEqual(snapshot.methods.first { $0.service == "spec" && $0.method == "sum" }?.calls("ok"), 1)
        XCTAssertEqual(snapshot.callsInFlight, 0)
    }
}
