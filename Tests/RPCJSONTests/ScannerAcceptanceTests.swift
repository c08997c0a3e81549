import RPCJSON
import XCTest

/// Inputs every strict parser must accept, in the spirit of nst/JSONTestSuite's y_ cases.
final class ScannerAcceptanceTests: XCTestCase {
    private func assertAccepted(_ cases: [(String, JSONKind)], file: StaticString = #filePath, line: UInt = #line) {
        for (text, kind) in cases {
            switch scanDocument(text) {
            case .success(let value):
                XCTAssertEqual(value.kind, kind, "kind of \(text)", file: file, line: line)
            case .failure(let error):
                XCTFail("rejected \(text): \(error)", file: file, line: line)
            }
        }
    }

    func testNumbers() {
        assertAccepted([
            ("0", .number), ("-0", .number), ("1", .number), ("-1", .number), ("1e5", .number), ("1E5", .number),
            ("1e+5", .number), ("1e-5", .number), ("1E-05", .number), ("0e0", .number), ("-0.0", .number),
            ("0.5", .number), ("1.25e-10", .number), ("123456789012345678901234567890", .number),
            ("-0.0e-5", .number), ("1e999", .number), ("[-1,0.1,2e3]", .array), ("  42  ", .number),
        ])
    }

    func testLiterals() {
        assertAccepted([("true", .bool), ("false", .bool), ("null", .null), (" \t\r\n null \n", .null)])
    }

    func testStringsWithEveryEscape() {
        assertAccepted([
            (#""""#, .string), (#""abc""#, .string),
            (#""\" \\ \/ \b \f \n \r \t""#, .string),
            (#""\u0000 \u001F \u00e9 \uFFFF \uABCD""#, .string),
            (#""\ud83d\ude00""#, .string),  // surrogate pair
            (#""\ud800""#, .string),  // lone high surrogate: textually valid JSON
            (#""\udc00\ud800x""#, .string),  // reversed pair: two lone surrogates
            ("\"é 😀 \u{7F} \u{10FFFF}\"", .string),  // raw non-ASCII and DEL are allowed
            ("\"/*not a comment*/\"", .string),
        ])
    }

    func testStructures() {
        assertAccepted([
            ("[]", .array), ("{}", .object), ("[ ]", .array), ("{ }", .object), ("[[]]", .array),
            (#"{"a":1}"#, .object), (#"{"a":[1,{"b":null}],"c":"d"}"#, .object),
            (#"{ "a" : 1 , "a" : 2 }"#, .object),  // duplicate keys are allowed by the grammar
            ("[1,\"2\",true,false,null,{},[]]", .array),
            ("\n[\n1\r\n,\t2\n]\n", .array),
            (#"{"":""}"#, .object),
        ])
    }

    func testEveryAllowedRawByteInAString() {
        // Every byte from 0x20 to 0x7F except the quote and backslash may appear raw.
        let content = (UInt8(0x20)...0x7F).filter { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        XCTAssertNil(scanError(quoted(content)))
    }

    func testWellFormedUTF8Boundaries() {
        let sequences: [[UInt8]] = [
            [0xC2, 0x80], [0xDF, 0xBF],  // U+0080, U+07FF
            [0xE0, 0xA0, 0x80], [0xEC, 0xBF, 0xBF], [0xED, 0x9F, 0xBF],  // U+0800, U+CFFF, U+D7FF
            [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF],  // U+E000, U+FFFF
            [0xF0, 0x90, 0x80, 0x80], [0xF3, 0xBF, 0xBF, 0xBF], [0xF4, 0x8F, 0xBF, 0xBF],  // U+10000 ... U+10FFFF
        ]
        for sequence in sequences {
            XCTAssertNil(scanError(quoted(sequence)), "\(sequence)")
            // Also where the word-at-a-time loop meets it at every alignment.
            for prefix in 0..<9 {
                let padding = [UInt8](repeating: UInt8(ascii: "a"), count: prefix)
                XCTAssertNil(scanError(quoted(padding + sequence + padding)), "\(sequence) after \(prefix)")
            }
        }
    }

    func testSpecialBytesAtEveryAlignmentOfTheFastPath() {
        // Escapes and quotes are found by an 8-byte-at-a-time loop; check each position in and across words.
        for position in 0..<24 {
            let before = String(repeating: "x", count: position)
            let after = String(repeating: "y", count: 24 - position)
            XCTAssertEqual(scanDocument("\"\(before)\\n\(after)\"").map { $0.range }, .success(0..<28))
            let text = "\"\(before)\"  "
            XCTAssertEqual(scanDocument(text).map { $0.range }, .success(0..<(position + 2)), text)
        }
    }

    func testSpecialBytesAtEveryPositionOfTheBlockLoop() {
        // Past a string's first word, runs are read 16 bytes at a time: every kind of special byte, at each
        // position in and across blocks and in the tail a word at a time, is found where it is.
        let length = 70
        for position in 0..<length {
            let before = [UInt8](repeating: UInt8(ascii: "x"), count: position)
            let after = [UInt8](repeating: UInt8(ascii: "y"), count: length - position)
            for control: UInt8 in [0x00, 0x1F] {
                XCTAssertEqual(
                    scanError(quoted(before + [control] + after)),
                    JSONSyntaxError(reason: .controlCharacterInString, offset: 1 + position), "\(control) at \(position)")
            }
            XCTAssertEqual(
                scanError(quoted(before + [0xFF] + after)), JSONSyntaxError(reason: .invalidUTF8, offset: 1 + position),
                "0xFF at \(position)")
            // The highest bytes that are not special, and a two-byte sequence: the string is accepted whole.
            for plain: [UInt8] in [[0x20], [0x7F], [0x21], [0x23], [0x5B], [0x5D], [0xC3, 0xA9]] {
                let bytes = quoted(before + plain + after)
                XCTAssertEqual(scanDocument(bytes).map { $0.range }, .success(0..<bytes.count), "\(plain) at \(position)")
            }
            let escaped = quoted(before + Array(#"\""#.utf8) + after)
            XCTAssertEqual(scanDocument(escaped).map { $0.range }, .success(0..<escaped.count), "escape at \(position)")
            let early = quoted(before) + Array(" ".utf8)
            XCTAssertEqual(scanDocument(early).map { $0.range }, .success(0..<(position + 2)), "quote at \(position)")
        }
    }
}
