import JSONRPC
import NIOCore
import NIOPosix
import RPCBinding
import RPCCore
import RPCJSON
import RPCProtocol
import XCTest

/// A service whose calls complete only when the test says so, from any thread.
final class ManualService: RPCService, @unchecked Sendable {
    let descriptor = RPCServiceDescriptor(name: "manual", version: "1", summary: "", methods: [RPCMethodDescriptor(name: "wait")])
    private(set) var responders: [RPCResponder] = []
    func handle(_ call: RPCCall, responder: RPCResponder) { responders.append(responder) }
}

final class ConcurrencyTests: XCTestCase {
    func testBatchReplyWaitsForEveryEntryAndCompletesOutOfOrder() throws {
        let service = ManualService()
        let harness = try RouterHarness(services: [service])
        let reply = harness.send(#"[{"jsonrpc":"2.0","method":"manual.wait","id":1},{"jsonrpc":"2.0","method":"manual.wait","id":2}]"#)
        XCTAssertFalse(reply.isComplete)
        service.responders[1].succeed("second")
        harness.loop.run()
        XCTAssertFalse(reply.isComplete, "the batch reply waits for all entries")
        service.responders[0].succeed("first")
        harness.loop.run()
        let replies = try JSONValue(parsing: XCTUnwrap(reply.text))
        XCTAssertEqual(Set(replies.arrayValue ?? []), [["jsonrpc": "2.0", "result": "first", "id": 1],
                                                       ["jsonrpc": "2.0", "result": "second", "id": 2]])
    }

    func testOnlyTheFirstCompletionCounts() throws {
        let service = ManualService()
        let harness = try RouterHarness(services: [service])
        let reply = harness.send(#"{"jsonrpc":"2.0","method":"manual.wait","id":1}"#)
        service.responders[0].succeed("once")
        service.responders[0].succeed("twice")
        service.responders[0].fail(RPCError.internalError)
        harness.loop.run()
        XCTAssertEqual(reply.completions, 1)
        XCTAssertEqual(reply.text, #"{"jsonrpc":"2.0","result":"once","id":1}"#)
    }

    func testCompletionFromAnotherThreadHopsToTheLoop() throws {
        // A real loop: EmbeddedEventLoop cannot tell threads apart.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let service = ManualService()
        let router = RPCRouter(registry: try RPCServiceRegistry(services: [service]), parser: RPCEnvelopeParser())
        let delivered = expectation(description: "reply delivered on the connection's loop")
        try loop.submit {
            let message = router.parser.parse(ByteBuffer(string: #"{"jsonrpc":"2.0","method":"manual.wait","id":7}"#))
            router.dispatch(message, connection: RouterHarness.connection, eventLoop: loop) { reply in
                XCTAssertTrue(loop.inEventLoop)
                XCTAssertEqual(reply.map { String(buffer: $0) }, #"{"jsonrpc":"2.0","result":true,"id":7}"#)
                delivered.fulfill()
            }
        }.wait()
        let responder = try loop.submit { service.responders[0] }.wait()
        Thread.detachNewThread { responder.succeed(true) }
        wait(for: [delivered], timeout: 10)
    }
}
