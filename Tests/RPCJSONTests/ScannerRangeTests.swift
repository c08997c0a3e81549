import RPCJSON
import XCTest

/// Kinds and byte ranges reported by `scanValue`, and the scanner's smaller primitives.
final class ScannerRangeTests: XCTestCase {
    func testRangesOfEachKindExcludeSurroundingWhitespace() throws {
        let cases: [(String, JSONKind, Range<Int>)] = [
            ("  {\"a\": [1, 2]} \n", .object, 2..<15), ("\t[ 1 , {} ]\r\n", .array, 1..<11),
            (" \"x\\ny\" ", .string, 1..<7), ("\n-12.5e3\n", .number, 1..<8), (" true ", .bool, 1..<5),
            ("false", .bool, 0..<5), ("\r\nnull\t", .null, 2..<6), ("\"\"", .string, 0..<2), ("0", .number, 0..<1),
        ]
        for (text, kind, range) in cases {
            try withScanner(text) { scanner in
                let value = try scanner.scanValue(depth: 0)
                XCTAssertEqual(value.kind, kind, text.debugDescription)
                XCTAssertEqual(value.range, range, text.debugDescription)
                XCTAssertEqual(scanner.offset, range.upperBound, "offset is just past the value")
                XCTAssertNoThrow(try scanner.expectEnd())
            }
        }
    }

    func testMemberRangesWhenWalkingAnObjectByHand() throws {
        // This is how the envelope parser uses the scanner: one member at a time.
        let text = #"{ "method" : "sum", "params" : [1, {"x": null}], "id" :7 }"#
        let bytes = Array(text.utf8)
        func slice(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        var members: [(String, JSONKind, String)] = []
        try withScanner(text) { scanner in
            XCTAssertTrue(scanner.consume(UInt8(ascii: "{")))
            repeat {
                let key = try scanner.scanString()
                XCTAssertFalse(key.hasEscapes)
                XCTAssertTrue(scanner.consume(UInt8(ascii: ":")))
                let value = try scanner.scanValue(depth: 1)
                members.append((slice(key.range), value.kind, slice(value.range)))
            } while scanner.consume(UInt8(ascii: ","))
            XCTAssertTrue(scanner.consume(UInt8(ascii: "}")))
            XCTAssertNoThrow(try scanner.expectEnd())
        }
        XCTAssertEqual(members.map(\.0), [#""method""#, #""params""#, #""id""#])
        XCTAssertEqual(members.map(\.1), [.string, .array, .number])
        XCTAssertEqual(members.map(\.2), [#""sum""#, #"[1, {"x": null}]"#, "7"])
    }

    func testScanStringReportsEscapes() throws {
        try withScanner(#"  "plain" "a\tb" "\u0041""#) { scanner in
            let plain = try scanner.scanString()
            XCTAssertEqual(plain.range, 2..<9)
            XCTAssertFalse(plain.hasEscapes)
            let tab = try scanner.scanString()
            XCTAssertEqual(tab.range, 10..<16)
            XCTAssertTrue(tab.hasEscapes)
            XCTAssertTrue(try scanner.scanString().hasEscapes)
        }
    }

    func testScanStringRejectsNonStrings() throws {
        for (text, error) in [
            ("1", JSONSyntaxError(reason: .unexpectedByte(UInt8(ascii: "1")), offset: 0)),
            ("  ", JSONSyntaxError(reason: .unexpectedEnd, offset: 2)),
        ] {
            try withScanner(text) { scanner in
                XCTAssertThrowsError(try scanner.scanString()) { XCTAssertEqual($0 as? JSONSyntaxError, error) }
            }
        }
    }

    func testWhitespacePeekAndConsume() throws {
        try withScanner(" \t\r\n x\u{0B}") { scanner in
            XCTAssertFalse(scanner.consume(UInt8(ascii: "y")))
            XCTAssertEqual(scanner.offset, 5, "whitespace is skipped even when nothing is consumed")
            XCTAssertEqual(scanner.peekNonWhitespace(), UInt8(ascii: "x"))
            XCTAssertEqual(scanner.offset, 5, "peeking does not consume")
            XCTAssertTrue(scanner.consume(UInt8(ascii: "x")))
            scanner.skipWhitespace()
            XCTAssertEqual(scanner.offset, 6, "vertical tab is not whitespace")
            XCTAssertEqual(scanner.peekNonWhitespace(), 0x0B)
            XCTAssertThrowsError(try scanner.expectEnd()) {
                XCTAssertEqual($0 as? JSONSyntaxError, JSONSyntaxError(reason: .trailingData, offset: 6))
            }
        }
        try withScanner("  ") { scanner in
            XCTAssertNil(scanner.peekNonWhitespace())
            XCTAssertEqual(scanner.offset, 2)
            XCTAssertNoThrow(try scanner.expectEnd())
        }
    }

    func testEmptyBufferWithoutBaseAddress() {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        var scanner = JSONScanner(bytes: empty, maxDepth: 8)
        XCTAssertNil(scanner.peekNonWhitespace())
        XCTAssertThrowsError(try scanner.scanValue(depth: 0)) {
            XCTAssertEqual($0 as? JSONSyntaxError, JSONSyntaxError(reason: .unexpectedEnd, offset: 0))
        }
        XCTAssertThrowsError(try JSONValue(parsing: empty))
    }

    func testScanningStartsAtTheGivenOffset() throws {
        try withScanner("garbage [1]") { scanner in
            scanner.offset = 7
            XCTAssertEqual(try scanner.scanValue(depth: 0).range, 8..<11)
        }
    }
}
