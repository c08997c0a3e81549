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
}
