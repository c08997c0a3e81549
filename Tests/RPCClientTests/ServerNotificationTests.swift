import NIOCore
import NIOEmbedded
import RPCTestSupport
import RPCJSON
import Synchronization
import XCTest

@testable import RPCClient

/// Notifications the server sends unasked reach their handler and leave pending calls alone.
final class ServerNotificationTests: XCTestCase {
    func testANotificationGoesToItsHandlerNotToPendingCalls() throws {
        let harness = try HandlerHarness()
        let received = Mutex<[JSONValue?]>([])
        harness.notifications.handle("rpc.event") { params in received.withLock { $0.append(params) } }
        let call = try harness.call("rpcd.ping", id: 1)
        try harness.reply(#"{"jsonrpc":"2.0","method":"rpc.event","params":{"subscription":1,"seq":1,"data":2}}"#)
        XCTAssertNil(outcome(call), "the call still waits for its reply")
        XCTAssertEqual(received.withLock { $0 }, [["subscription": 1, "seq": 1, "data": 2]])
        try harness.reply(#"{"jsonrpc":"2.0","result":"pong","id":1}"#)
        XCTAssertEqual(value(call), "pong")
    }

    func testANotificationNobodyHandlesIsDroppedAndPendingCallsWait() throws {
        // An event queued before an unsubscribe reached the server arrives after its handler is gone.
        let harness = try HandlerHarness()
        let call = try harness.call("rpcd.ping", id: 1)
        try harness.reply(#"{"jsonrpc":"2.0","method":"rpc.event","params":{"subscription":9,"seq":3,"data":1}}"#)
        try harness.reply(#"{"jsonrpc":"2.0","method":"rpc.somethingElse"}"#)
        XCTAssertNil(outcome(call), "the call still waits for its reply")
        try harness.reply(#"{"jsonrpc":"2.0","result":"pong","id":1}"#)
        XCTAssertEqual(value(call), "pong")
    }

    func testTheEndOfTheConnectionIsToldOnce() throws {
        let harness = try HandlerHarness()
        let ends = Mutex(0)
        harness.notifications.onConnectionEnded { ends.withLock { $0 += 1 } }
        _ = try harness.channel.finish()
        XCTAssertEqual(ends.withLock { $0 }, 1)
    }
}
