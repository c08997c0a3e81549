import JSONRPC
import NIOCore
import NIOEmbedded
import RPCCore
import XCTest

/// Work that yields runs in rounds, one turn each, with a pause between rounds in which the loop polls its
/// sockets (issue 21: `execute` would run re-submitted work before any input).
final class RPCLoopTurnsTests: XCTestCase {
    func testWorkThatYieldsAgainWaitsForTheNextRoundAfterAPause() throws {
        let loop = EmbeddedEventLoop()
        let router = RPCRouter(registry: try RPCServiceRegistry(services: []), parser: RPCEnvelopeParser())
        let turns = router.turns(on: loop)
        XCTAssertTrue(turns === router.turns(on: loop), "one per loop")
        XCTAssertTrue(turns === RPCLoopTurns.of(loop), "the same for every kind of work: the router's, a module host's link, events")
        var ran: [String] = []
        func work(_ name: String, rounds: Int) {
            ran.append(name)
            if rounds > 1 { turns.yield { work(name, rounds: rounds - 1) } }
        }
        turns.yield { work("a", rounds: 3) }
        turns.yield { work("b", rounds: 1) }
        loop.run()
        XCTAssertEqual(ran, [], "nothing runs before the pause: the loop polls first")
        loop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(ran, ["a", "b"], "one round: each its turn, the yield again waits")
        loop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(ran, ["a", "b", "a"])
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(ran, ["a", "b", "a", "a"])
    }

    /// A round ends once it has kept the loop for a turn, however many are waiting: the rest run in the next.
    func testARoundEndsAfterATurnAndTheRestWaitForTheNext() {
        let loop = EmbeddedEventLoop()
        let turns = RPCLoopTurns.of(loop)
        var clock = NIODeadline.uptimeNanoseconds(1_000_000_000)
        turns.now = { clock }
        var ran: [Int] = []
        for index in 0..<4 {
            turns.yield {
                ran.append(index)
                clock = clock + .milliseconds(1)  // a millisecond of work
            }
        }
        loop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(ran, [0, 1], "two milliseconds: the round's turn")
        loop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(ran, [0, 1, 2, 3])
    }

    /// Two sets of turns on one loop would each find the other's round due as its own ends, and a busy loop would
    /// run them back to back without polling: every kind of work shares its loop's one.
    func testEveryUserOfALoopSharesItsTurnsAndOtherLoopsHaveTheirOwn() {
        let first = EmbeddedEventLoop()
        let second = EmbeddedEventLoop()
        let turns = RPCLoopTurns.of(first)
        XCTAssertTrue(turns === RPCLoopTurns.of(first))
        XCTAssertFalse(turns === RPCLoopTurns.of(second))
    }
}
