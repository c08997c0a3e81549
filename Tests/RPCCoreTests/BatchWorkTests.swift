import NIOCore
import RPCBinding
import RPCCore
import RPCJSON
import RPCProtocol
import Synchronization
import XCTest

/// Work whose result is already refused is not done (issue 21): a batch whose replies pass the reply size limit
/// stops running entries, instead of building every reply for a -32008.
final class BatchWorkTests: XCTestCase {
    /// Answers every call with a 200-byte string, and counts the calls it ran.
    private final class LargeAnswers: RPCService, Sendable {
        let descriptor = RPCServiceDescriptor(
            name: "big", version: "1", summary: "Large answers", methods: [RPCMethodDescriptor(name: "get")])
        let ran = Atomic<Int>(0)

        func handle(_ call: RPCCall, responder: RPCResponder) {
            ran.add(1, ordering: .relaxed)
            responder.succeed(rawJSON: ByteBuffer(string: "\"" + String(repeating: "x", count: 200) + "\""))
        }
    }

    func testABatchWhoseReplyIsRefusedStopsRunningEntries() throws {
        let service = LargeAnswers()
        let harness = try RouterHarness(services: [service], maxReplySize: 1000)
        let entries = (1...100).map { #"{"jsonrpc":"2.0","method":"big.get","id":\#($0)}"# }
        let reply = try harness.call("[" + entries.joined(separator: ",") + "]")
        XCTAssertEqual(reply["error"]?["code"], -32008)
        XCTAssertLessThanOrEqual(service.ran.load(ordering: .relaxed), 5, "no reply is built past the limit")
    }

    func testABatchWithinTheLimitRunsEveryEntry() throws {
        let service = LargeAnswers()
        let harness = try RouterHarness(services: [service], maxReplySize: 1 << 20)
        let entries = (1...100).map { #"{"jsonrpc":"2.0","method":"big.get","id":\#($0)}"# }
        let reply = try harness.call("[" + entries.joined(separator: ",") + "]")
        XCTAssertEqual(reply.arrayValue?.count, 100)
        XCTAssertEqual(service.ran.load(ordering: .relaxed), 100)
    }
}
