@testable import RPCModules
import XCTest

/// `TokenSlots` alone: tokens are never given twice, so a token finds its value and nothing else; a number
/// whose slot still holds an older value is skipped; the ring grows and shrinks with the values it holds.
final class TokenSlotsTests: XCTestCase {
    private func remove(_ token: UInt64, from slots: inout TokenSlots<Int>) throws {
        _ = slots.remove(at: try XCTUnwrap(slots.index(of: token), "token \(token) finds nothing"))
    }

    func testATokenFindsItsValueUntilItIsRemovedAndNeverAnother() throws {
        var slots = TokenSlots<String>()
        let a = slots.insert("a")
        let b = slots.insert("b")
        XCTAssertEqual([a, b], [1, 2])
        XCTAssertEqual(slots.index(of: a).map { slots[$0] }, "a")
        let index = try XCTUnwrap(slots.index(of: b))
        slots[index] += "!"
        XCTAssertEqual(slots.remove(at: try XCTUnwrap(slots.index(of: a))), "a")
        XCTAssertNil(slots.index(of: a), "removed")
        XCTAssertEqual(slots.index(of: b).map { slots[$0] }, "b!")
        let c = slots.insert("c")
        XCTAssertEqual(c, 3, "a token is never given twice")
        XCTAssertNil(slots.index(of: a))
        XCTAssertNil(slots.index(of: 0), "never given")
        XCTAssertNil(slots.index(of: c + UInt64(slots.slotCount)), "not given yet, though its slot is taken")

        // Emptied all at once (the host ended): the next tokens are new ones too.
        XCTAssertEqual(slots.removeAll().map { $0.token }.sorted(), [b, c])
        XCTAssertTrue(slots.isEmpty)
        XCTAssertEqual(slots.insert("d"), 4)
    }

    func testANumberWhoseSlotHoldsAnOlderValueIsSkipped() throws {
        var slots = TokenSlots<Int>()
        let kept = slots.insert(0)
        // The ring has `keptSlots` slots: go once around it, each value answered before the next.
        for value in 1..<TokenSlots<Int>.keptSlots {
            try remove(slots.insert(value), from: &slots)
        }
        let next = slots.insert(-1)
        XCTAssertEqual(next, kept + UInt64(TokenSlots<Int>.keptSlots) + 1, "the number landing on the kept value's slot is skipped")
        XCTAssertEqual(slots.index(of: kept).map { slots[$0] }, 0)
        XCTAssertEqual(slots.index(of: next).map { slots[$0] }, -1)
        XCTAssertNil(slots.index(of: next - 1))
    }

    /// The bound: the ring doubles before more than half its slots are taken, halves while at most an eighth
    /// are (down to `keptSlots`), and goes back to `keptSlots` whenever it empties.
    func testTheRingGrowsAndShrinksWithTheValues() throws {
        var slots = TokenSlots<Int>()
        var tokens = (0..<1000).map { slots.insert($0) }
        XCTAssertEqual(slots.slotCount, 2048, "room for twice the values")
        // All but the last ten answered, then a steady load of ten for a while.
        for token in tokens[..<990] { try remove(token, from: &slots) }
        tokens.removeFirst(990)
        XCTAssertLessThanOrEqual(slots.slotCount, max(8 * slots.count, TokenSlots<Int>.keptSlots))
        for round in 0..<1000 {
            try remove(tokens.removeFirst(), from: &slots)
            tokens.append(slots.insert(round))
            XCTAssertEqual(slots.slotCount, TokenSlots<Int>.keptSlots)
        }
        for token in tokens { try remove(token, from: &slots) }
        XCTAssertEqual(slots.slotCount, TokenSlots<Int>.keptSlots)
    }

    /// Two values that would share a slot of the smaller ring keep it from halving, until one goes.
    func testAHalvingWaitsForValuesThatWouldShareASlot() throws {
        var slots = TokenSlots<Int>()
        let tokens = (0..<100).map { slots.insert($0) }
        XCTAssertEqual(slots.slotCount, 256)
        // Tokens 3 and 67 are apart by the smallest ring's size (64), not by the next one's.
        for token in tokens where token != 3 && token != 67 { try remove(token, from: &slots) }
        XCTAssertEqual(slots.slotCount, 128, "halved once; once more would put 3 and 67 in one slot")
        try remove(67, from: &slots)
        XCTAssertEqual(slots.slotCount, TokenSlots<Int>.keptSlots)
        XCTAssertEqual(slots.index(of: 3).map { slots[$0] }, 2)
    }
}
