import JSONRPC
import NIOCore
import RPCProtocol
@testable import RPCServer
import XCTest

/// `ConnectionShutdown` alone, without a channel: what it counts, and what it tells the handler to do.
final class ConnectionShutdownTests: XCTestCase {
    private func request(_ id: RPCID?) -> RPCMessage {
        .single(.request(RPCRequest(method: "calc.add", id: id)))
    }

    func testCountsAcceptedMessagesAndKeepsTheLastRequestID() {
        var shutdown = ConnectionShutdown()
        shutdown.accept(request(RPCID(1)))
        shutdown.accept(request(nil))
        shutdown.accept(.batch([.request(RPCRequest(method: "a.b", id: RPCID("x"))), .request(RPCRequest(method: "a.b", id: nil))]))
        shutdown.accept(.failure(.parseError("bad")))
        XCTAssertEqual(shutdown.accepted, 4)
        XCTAssertEqual(shutdown.lastID, RPCID("x"), "a notification or an unusable frame names no id")
    }

    func testStoppingAnnouncesTheCutThenRefusesWhatWaitsAndClosesOnceQuiet() {
        var shutdown = ConnectionShutdown()
        shutdown.accept(request(RPCID(7)))
        XCTAssertNil(shutdown.answered(quiet: true), "serving: answers close nothing")
        XCTAssertEqual(shutdown.stop(quiet: false), [.announce(accepted: 1, lastID: RPCID(7)), .refuseWaiting])
        XCTAssertEqual(shutdown.phase, .stopping)
        XCTAssertEqual(shutdown.stop(quiet: false), [], "stopped once")
        XCTAssertNil(shutdown.answered(quiet: false))
        XCTAssertEqual(shutdown.answered(quiet: true), .close)
        XCTAssertEqual(shutdown.phase, .closed)
        XCTAssertNil(shutdown.answered(quiet: true), "closed once")
    }

    func testStoppingWhenQuietClosesAtOnce() {
        var shutdown = ConnectionShutdown()
        XCTAssertEqual(shutdown.stop(quiet: true), [.announce(accepted: 0, lastID: nil), .refuseWaiting, .close])
        XCTAssertEqual(shutdown.phase, .closed)
    }

    func testARefusedFrameIsAnsweredOnceWhatCameBeforeItIs() {
        var shutdown = ConnectionShutdown()
        shutdown.accept(request(RPCID(1)))
        XCTAssertNil(shutdown.refuseFrame(quiet: false))
        XCTAssertEqual(shutdown.phase, .finishing)
        XCTAssertTrue(shutdown.runsMessages, "what waited for a call slot was read before the refused frame")
        XCTAssertEqual(shutdown.stop(quiet: false), [], "the refusal ends the connection, not a stop")
        XCTAssertNil(shutdown.answered(quiet: false))
        XCTAssertEqual(shutdown.answered(quiet: true), .answerRefusal)
        XCTAssertEqual(shutdown.phase, .closed)

        var quiet = ConnectionShutdown()
        XCTAssertEqual(quiet.refuseFrame(quiet: true), .answerRefusal)
        XCTAssertEqual(quiet.phase, .closed)
    }

    func testRefusalsAnswerEveryIDAndNothingElse() {
        func text(_ reply: RPCReply?) -> String? { reply.map { String(buffer: $0.serialized) } }
        let error = #""error":{"code":-32006,"message":"Server shutting down"}"#
        XCTAssertEqual(text(ConnectionShutdown.refusal(of: request(RPCID(3)))), #"{"jsonrpc":"2.0",\#(error),"id":3}"#)
        XCTAssertNil(ConnectionShutdown.refusal(of: request(nil)))
        XCTAssertEqual(text(ConnectionShutdown.refusal(of: .failure(.parseError("x")))), #"{"jsonrpc":"2.0",\#(error),"id":null}"#)
        XCTAssertEqual(
            text(ConnectionShutdown.refusal(of: .batch([.request(RPCRequest(method: "a.b", id: RPCID(1))), .request(RPCRequest(method: "a.b", id: nil))]))),
            #"[{"jsonrpc":"2.0",\#(error),"id":1}]"#)
        XCTAssertNil(ConnectionShutdown.refusal(of: .batch([.request(RPCRequest(method: "a.b", id: nil))])))
    }

    func testGoingAwayWritesTheIDAsTheClientDid() {
        XCTAssertEqual(
            String(buffer: ConnectionShutdown.goingAway(accepted: 12, lastID: RPCID(rawJSON: ByteBuffer(string: "1.50")))),
            #"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":1.50,"accepted":12}}"#)
        XCTAssertEqual(
            String(buffer: ConnectionShutdown.goingAway(accepted: 0, lastID: nil)),
            #"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":null,"accepted":0}}"#)
    }
}
