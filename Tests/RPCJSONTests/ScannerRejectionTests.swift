import RPCJSON
import XCTest

/// Inputs a strict parser must reject, in the spirit of nst/JSONTestSuite's n_ cases, with the reason and the
/// offset reported.
final class ScannerRejectionTests: XCTestCase {
    private typealias Case = (input: String, reason: JSONSyntaxError.Reason, offset: Int)

    private func assertRejected(_ cases: [Case], file: StaticString = #filePath, line: UInt = #line) {
        for (input, reason, offset) in cases {
            XCTAssertEqual(
                scanError(input), JSONSyntaxError(reason: reason, offset: offset), "input \(input.debugDescription)",
                file: file, line: line)
        }
    }

    func testNumbers() {
        assertRejected([
            ("01", .invalidNumber, 1), ("-01", .invalidNumber, 2), ("00", .invalidNumber, 1),
            ("1.", .invalidNumber, 2), ("1.e5", .invalidNumber, 2), (".5", .unexpectedByte(UInt8(ascii: ".")), 0),
            ("-", .invalidNumber, 1), ("- 1", .invalidNumber, 1), ("1e", .invalidNumber, 2), ("1e+", .invalidNumber, 3),
            ("1E-x", .invalidNumber, 3), ("+1", .unexpectedByte(UInt8(ascii: "+")), 0),
            ("-a", .invalidNumber, 1), ("[1.]", .invalidNumber, 3), ("0x10", .trailingData, 1),
            ("1 2", .trailingData, 2), ("NaN", .unexpectedByte(UInt8(ascii: "N")), 0),
            ("-Infinity", .invalidNumber, 1), ("Infinity", .unexpectedByte(UInt8(ascii: "I")), 0),
            ("[1e]", .invalidNumber, 3), ("1.5.2", .trailingData, 3),
        ])
    }

    func testLiterals() {
        assertRejected([
            ("nul", .unexpectedEnd, 3), ("nulx", .unexpectedByte(UInt8(ascii: "x")), 3),
            ("tru", .unexpectedEnd, 3), ("True", .unexpectedByte(UInt8(ascii: "T")), 0),
            ("falsy", .unexpectedByte(UInt8(ascii: "y")), 4), ("nullx", .trailingData, 4),
            ("[truefalse]", .unexpectedByte(UInt8(ascii: "f")), 5), ("undefined", .unexpectedByte(UInt8(ascii: "u")), 0),
        ])
    }

    func testStrings() {
        assertRejected([
            (#""abc"#, .unexpectedEnd, 4), (#"""#, .unexpectedEnd, 1), ("'a'", .unexpectedByte(UInt8(ascii: "'")), 0),
            (#""\x""#, .invalidEscape, 2), (#""\a""#, .invalidEscape, 2), (#""\'""#, .invalidEscape, 2),
            (#""\u12""#, .invalidEscape, 5), (#""\uGHIJ""#, .invalidEscape, 3), (#""\u""#, .invalidEscape, 3),
            (#""\U0041""#, .invalidEscape, 2), (#""\"#, .unexpectedEnd, 2), (#""\u00"#, .unexpectedEnd, 5),
            ("\"a\u{0}b\"", .controlCharacterInString, 2), ("\"\t\"", .controlCharacterInString, 1),
            ("\"line\nbreak\"", .controlCharacterInString, 5), ("\"\u{1F}\"", .controlCharacterInString, 1),
            ("\"\\\u{0}\"", .invalidEscape, 2),
        ])
    }

    func testStructures() {
        assertRejected([
            ("", .unexpectedEnd, 0), (" \n\t ", .unexpectedEnd, 4),
            ("[1,]", .unexpectedByte(UInt8(ascii: "]")), 3), (#"{"a":1,}"#, .unexpectedByte(UInt8(ascii: "}")), 7),
            (#"{"a" 1}"#, .unexpectedByte(UInt8(ascii: "1")), 5), ("[1 2]", .unexpectedByte(UInt8(ascii: "2")), 3),
            ("{1:2}", .unexpectedByte(UInt8(ascii: "1")), 1), ("[", .unexpectedEnd, 1), ("[1", .unexpectedEnd, 2),
            ("[1,", .unexpectedEnd, 3), ("{", .unexpectedEnd, 1), (#"{"a""#, .unexpectedEnd, 4),
            (#"{"a":"#, .unexpectedEnd, 5), (#"{"a":1"#, .unexpectedEnd, 6), ("[[]", .unexpectedEnd, 3),
            ("]", .unexpectedByte(UInt8(ascii: "]")), 0), ("[}", .unexpectedByte(UInt8(ascii: "}")), 1),
            (#"{"a":1]"#, .unexpectedByte(UInt8(ascii: "]")), 6), ("[,1]", .unexpectedByte(UInt8(ascii: ",")), 1),
            ("[1,,2]", .unexpectedByte(UInt8(ascii: ",")), 3), (#"{,"a":1}"#, .unexpectedByte(UInt8(ascii: ",")), 1),
            (#"{"a"::1}"#, .unexpectedByte(UInt8(ascii: ":")), 5), (#"{"a",1}"#, .unexpectedByte(UInt8(ascii: ",")), 4),
            ("[1] x", .trailingData, 4), ("{} {}", .trailingData, 3), ("[]]", .trailingData, 2),
            ("[1]/*c*/", .trailingData, 3), ("// c\n1", .unexpectedByte(UInt8(ascii: "/")), 0),
            (#"{'a':1}"#, .unexpectedByte(UInt8(ascii: "'")), 1), ("{a:1}", .unexpectedByte(UInt8(ascii: "a")), 1),
            ("[\u{0B}1]", .unexpectedByte(0x0B), 1),  // vertical tab is not JSON whitespace
            ("\u{A0}1", .unexpectedByte(0xC2), 0),  // neither is a non-breaking space
        ])
    }

    func testNonASCIIOutsideStringsIsRejected() {
        XCTAssertEqual(scanError([0xEF, 0xBB, 0xBF, 0x31]), JSONSyntaxError(reason: .unexpectedByte(0xEF), offset: 0))
        XCTAssertEqual(scanError([0x5B, 0xFF, 0x5D]), JSONSyntaxError(reason: .unexpectedByte(0xFF), offset: 1))
        XCTAssertEqual(scanError([0x31, 0x80]), JSONSyntaxError(reason: .trailingData, offset: 1))
    }

    func testDescriptions() {
        XCTAssertEqual(
            JSONSyntaxError(reason: .unexpectedByte(UInt8(ascii: "}")), offset: 12).description,
            "unexpected byte '}' at offset 12")
        XCTAssertEqual(
            JSONSyntaxError(reason: .tooDeep(limit: 64), offset: 300).description, "nesting deeper than 64 at offset 300")
        XCTAssertEqual(
            JSONSyntaxError(reason: .unexpectedByte(0x0A), offset: 0).description, "unexpected byte 0x0A at offset 0")
        XCTAssertEqual(
            JSONSyntaxError(reason: .unexpectedByte(0xFF), offset: 1).description, "unexpected byte 0xFF at offset 1")
        XCTAssertEqual(JSONSyntaxError(reason: .unexpectedEnd, offset: 3).description, "unexpected end of input at offset 3")
        XCTAssertEqual(JSONSyntaxError(reason: .trailingData, offset: 4).description, "unexpected data after the value at offset 4")
        let reasons: [JSONSyntaxError.Reason] = [.invalidEscape, .invalidUTF8, .invalidNumber, .controlCharacterInString]
        let descriptions = Set(reasons.map { JSONSyntaxError(reason: $0, offset: 7).description })
        XCTAssertEqual(descriptions.count, reasons.count)
        XCTAssertTrue(descriptions.allSatisfy { $0.hasSuffix(" at offset 7") }, "\(descriptions)")
    }
}
