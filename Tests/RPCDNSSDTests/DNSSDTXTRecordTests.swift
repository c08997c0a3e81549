import RPCDNSSD
import XCTest

final class DNSSDTXTRecordTests: XCTestCase {
    func testStringsAndSize() throws {
        let record = try DNSSDTXTRecord([.init("txtvers", "1"), .init("flag", nil), .init("k", "")])
        XCTAssertEqual(record.strings, [Array("txtvers=1".utf8), Array("flag".utf8), Array("k=".utf8)])
        XCTAssertEqual(record.wireSize, 10 + 5 + 3)
        XCTAssertEqual(record["TXTVERS"], "1", "keys compare case-insensitively")
        XCTAssertNil(record["flag"])
        XCTAssertEqual(record["k"], "")
    }

    func testRFC6763RulesAreEnforced() {
        XCTAssertThrowsError(try DNSSDTXTRecord([.init("", "x")]))
        XCTAssertThrowsError(try DNSSDTXTRecord([.init("tenletters", "x")]), "keys over 9 characters")
        XCTAssertThrowsError(try DNSSDTXTRecord([.init("a=b", "x")]))
        XCTAssertThrowsError(try DNSSDTXTRecord([.init("caf\u{e9}", "x")]), "keys are ASCII")
        XCTAssertThrowsError(try DNSSDTXTRecord([.init("a", "1"), .init("A", "2")]), "duplicate key")
        XCTAssertThrowsError(try DNSSDTXTRecord([.init("v", String(repeating: "x", count: 254))]), "over 255 bytes")
        XCTAssertNoThrow(try DNSSDTXTRecord([.init("v", String(repeating: "x", count: 253))]))
        let big = (0..<3).map { DNSSDTXTRecord.Entry("k\($0)", String(repeating: "x", count: 200)) }
        XCTAssertThrowsError(try DNSSDTXTRecord(big)) { error in
            XCTAssertTrue("\(error)".contains("RFC 6763 advises at most 400"), "\(error)")
        }
    }

    func testParsingIsLenientAndFirstKeyWins() {
        let record = DNSSDTXTRecord(parsing: [Array("a=1".utf8), Array("=orphan".utf8), [], Array("A=2".utf8), Array("b=x=y".utf8), [0x63, 0x3D, 0xFF]])
        XCTAssertEqual(record["a"], "1")
        XCTAssertEqual(record["b"], "x=y")
        XCTAssertEqual(record["c"], "\u{FFFD}")
        XCTAssertEqual(record.entries.count, 3)
    }
}
