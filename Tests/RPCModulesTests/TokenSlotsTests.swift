@testable import RPCModules
import XCTest

/// `TokenSlots` alone: a token finds its value and nothing else, a slot is taken again with a token of its
/// own, and the array holds no more slots than the most values it held at once, none past its last value.
final class TokenSlotsTests: XCTestCase {
    func testATokenFindsItsValueUntilItIsRemovedAndNeverAnother() throws {
        var slots = TokenSlots<String>()
        let a = slots.insert("a")
        let b = slots.insert("b")
        XCTAssertEqual(slots.count, 2)
        XCTAssertEqual(slots.index(of: a).map { slots[$0] }, "a")
        let index = try XCTUnwrap(slots.index(of: b))
        slots[index] += "!"
        XCTAssertEqual(slots.remove(at: try XCTUnwrap(slots.index(of: a))), "a")
        XCTAssertNil(slots.index(of: a), "removed")
        XCTAssertEqual(slots.index(of: b).map { slots[$0] }, "b!")

        // The slot is taken again, under a token of its own: the old one does not find the new value.
        let c = slots.insert("c")
        XCTAssertEqual(c & 0xFFFF_FFFF, a & 0xFFFF_FFFF, "the free slot is taken again")
        XCTAssertNotEqual(c, a)
        XCTAssertNil(slots.index(of: a))
        XCTAssertEqual(slots.index(of: c).map { slots[$0] }, "c")
        XCTAssertNil(slots.index(of: 0), "never given")
        XCTAssertNil(slots.index(of: c + 7 << 32), "another generation")
        XCTAssertNil(slots.index(of: c + 1000), "past the array")
    }

    func testASlotGivenBackAndMadeAgainDoesNotTakeAnOldToken() throws {
        var slots = TokenSlots<Int>()
        var tokens: [UInt64] = []
        // The last slot is taken, given back, made again, many times over: each time with a token of its own.
        for round in 0..<100 {
            let token = slots.insert(round)
            XCTAssertFalse(tokens.contains(token))
            tokens.append(token)
            _ = slots.remove(at: try XCTUnwrap(slots.index(of: token)))
            XCTAssertEqual(slots.slotCount, 0)
        }
        let kept = slots.insert(-1)
        for token in tokens { XCTAssertNil(slots.index(of: token)) }
        // And so after every value was taken at once (the host ended).
        let ended = slots.removeAll()
        XCTAssertEqual(ended.map { $0.token }, [kept])
        XCTAssertTrue(slots.isEmpty)
        XCTAssertNotEqual(slots.insert(-2), kept)
    }

    /// The bound: slots past the last value are given back as they free, a new value takes the lowest free
    /// slot, so after a burst a steady load gathers at the front and the array shrinks back to it; empty, it
    /// keeps a little room only.
    func testTheArrayShrinksBackToTheValuesItHolds() throws {
        var slots = TokenSlots<Int>()
        // A burst of 1,000, then all but the last ten answered.
        var burst = (0..<1000).map { slots.insert($0) }
        XCTAssertEqual(slots.slotCount, 1000)
        for token in burst[..<990] { _ = slots.remove(at: try XCTUnwrap(slots.index(of: token))) }
        XCTAssertEqual(slots.slotCount, 1000, "the last value keeps the array's end")
        burst.removeFirst(990)

        // A steady load of ten: each answered, then one more sent. They take the lowest slots.
        var steady: [UInt64] = []
        for round in 0..<10 {
            steady.append(slots.insert(round))
            _ = slots.remove(at: try XCTUnwrap(slots.index(of: burst.removeFirst())))
        }
        XCTAssertEqual(steady.map { Int($0 & 0xFFFF_FFFF) }, Array(0..<10), "the lowest free slots")
        XCTAssertEqual(slots.slotCount, 10, "nothing past the last value")
        XCTAssertEqual(slots.count, 10)
        XCTAssertLessThanOrEqual(slots.reservedSlots, TokenSlots<Int>.keptSlots, "its storage made smaller with it")
        for _ in 0..<1000 {
            let token = slots.insert(0)
            _ = slots.remove(at: try XCTUnwrap(slots.index(of: steady.removeFirst())))
            steady.append(token)
            XCTAssertLessThanOrEqual(slots.slotCount, 11, "no more slots than the most values at once")
        }
        for token in steady { _ = slots.remove(at: try XCTUnwrap(slots.index(of: token))) }
        XCTAssertEqual(slots.slotCount, 0)
        XCTAssertLessThanOrEqual(slots.reservedSlots, TokenSlots<Int>.keptSlots, "empty, it keeps a little room only")
    }
}
