import NIOCore
import NIOEmbedded
import RPCJSON
import RPCTestSupport
import Synchronization
import XCTest

@testable import RPCClient

/// A stopping server's `rpc.goingAway` {"accepted": N} (docs/PROTOCOL.md §4 "Shutdown"), as the client handler
/// takes it: the calls after the cut fail with -32006 to be sent again, the accepted ones are still answered,
/// the notifications after the cut are handed over to be sent again, and nothing new goes out but rpc.cancel.
final class GoingAwayTests: XCTestCase {
    func testTheCutFailsWhatCameAfterItAndLetsTheAcceptedFinish() throws {
        let harness = try HandlerHarness()
        let unsent = Mutex<[[UInt8]]?>(nil)
        harness.notifications.onGoingAway { payloads in unsent.withLock { $0 = payloads } }
        let accepted = try harness.call("a.slow", id: 1)         // frame 1
        try harness.notify("a.note")                              // frame 2: read (frame 3 is answered)
        let answered = try harness.call("a.b", id: 2)             // frame 3
        try harness.notify("a.late")                              // frame 4: after the cut
        let cut = try harness.call("a.c", id: 3)                  // frame 5: after the cut
        while try harness.sent() != nil {}
        try harness.reply(#"{"jsonrpc":"2.0","result":2,"id":2}"#)
        XCTAssertEqual(value(answered), 2)
        XCTAssertFalse(harness.notifications.hasGoneAway)

        try harness.reply(#"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":2,"accepted":3}}"#)
        XCTAssertEqual(clientError(cut), RPCClientHandler.notRun)
        XCTAssertEqual(RPCClientHandler.notRun, .remote(RPCError(code: -32006, message: "Server shutting down")))
        XCTAssertNil(outcome(accepted), "accepted: its reply is still to come")
        XCTAssertTrue(harness.notifications.hasGoneAway)
        XCTAssertEqual(unsent.withLock { $0 }?.map { String(decoding: $0, as: UTF8.self) },
                       [#"{"jsonrpc":"2.0","method":"a.late"}"#])

        XCTAssertThrowsError(try harness.call("a.d", id: 4), "nothing new goes to a server that left") { error in
            XCTAssertEqual(error as? RPCClientError, RPCClientHandler.notRun)
        }
        XCTAssertNil(try harness.sent())
        try harness.cancel(key: 1)
        XCTAssertEqual(try harness.sent(), #"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":1}}"#,
                       "a cancel still goes: the server runs it for the calls it accepted")
        XCTAssertEqual(clientError(accepted), .cancelled)
        XCTAssertEqual(harness.handler.pendingCount, 0)
    }

    func testAnAcceptedCallWithoutItsReplyAtTheCloseMayHaveRun() throws {
        let harness = try HandlerHarness()
        let accepted = try harness.call("a.b", id: 1)
        try harness.reply(#"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":1,"accepted":1}}"#)
        XCTAssertNil(outcome(accepted))
        try harness.channel.close().wait()
        XCTAssertEqual(clientError(accepted), .connectionClosed)
    }

    func testTheLedgerCountsFramesAndKeepsOnlyUnreadNotifications() {
        var ledger = RPCFrameLedger()
        XCTAssertEqual(ledger.wrote(), 1)
        ledger.wroteNotification(ByteBuffer(string: "n2"))
        ledger.wroteNotification(ByteBuffer(string: "n3"))
        XCTAssertEqual(ledger.wrote(), 4)
        ledger.answered(frame: 3)  // n2 was read
        XCTAssertFalse(ledger.isAfterTheCut(4))
        XCTAssertEqual(ledger.cut(accepted: 2)?.map { String(decoding: $0, as: UTF8.self) }, ["n3"])
        XCTAssertNil(ledger.cut(accepted: 4), "the first cut counts")
        XCTAssertTrue(ledger.isAfterTheCut(3))
        XCTAssertFalse(ledger.isAfterTheCut(2))
        var fresh = RPCFrameLedger()
        for index in 0..<(RPCFrameLedger.maxUnsureNotifications + 10) { fresh.wroteNotification(ByteBuffer(string: "\(index)")) }
        XCTAssertEqual(fresh.cut(accepted: 0)?.count, RPCFrameLedger.maxUnsureNotifications, "only the last are kept")
    }
}
