import RPCJSON
import XCTest

/// UTF-8 validation inside strings: only the well-formed sequences of Unicode Table 3-7 pass.
final class ScannerUTF8Tests: XCTestCase {
    private func assertInvalid(
        _ sequence: [UInt8], reason: JSONSyntaxError.Reason = .invalidUTF8, file: StaticString = #filePath, line: UInt = #line
    ) {
        // Errors point at the lead byte, whatever alignment the fast path meets it at.
        for prefix in 0..<9 {
            let padding = [UInt8](repeating: UInt8(ascii: "a"), count: prefix)
            XCTAssertEqual(
                scanError(quoted(padding + sequence + padding)), JSONSyntaxError(reason: reason, offset: 1 + prefix),
                "\(sequence) after \(prefix) bytes", file: file, line: line)
        }
    }

    func testOverlongEncodingsAreRejected() {
        assertInvalid([0xC0, 0x80])  // U+0000 in two bytes
        assertInvalid([0xC1, 0xBF])
        assertInvalid([0xE0, 0x80, 0xAF])  // '/' in three bytes
        assertInvalid([0xE0, 0x9F, 0xBF])
        assertInvalid([0xF0, 0x80, 0x80, 0xAF])
        assertInvalid([0xF0, 0x8F, 0xBF, 0xBF])
    }

    func testSurrogatesEncodedInUTF8AreRejected() {
        assertInvalid([0xED, 0xA0, 0x80])  // U+D800
        assertInvalid([0xED, 0xBF, 0xBF])  // U+DFFF
        assertInvalid([0xED, 0xA0, 0xBD, 0xED, 0xB2, 0xA9])  // CESU-8 style pair
    }

    func testValuesAboveTheUnicodeRangeAreRejected() {
        assertInvalid([0xF4, 0x90, 0x80, 0x80])  // U+110000
        assertInvalid([0xF5, 0x80, 0x80, 0x80])
        assertInvalid([0xF8, 0x88, 0x80, 0x80, 0x80])
        assertInvalid([0xFF])
        assertInvalid([0xFE])
    }

    func testTruncatedAndStraySequencesAreRejected() {
        assertInvalid([0xE2, 0x82])  // the euro sign without its last byte, followed by the closing quote
        assertInvalid([0xF0, 0x9F, 0x98])
        assertInvalid([0xC3])
        assertInvalid([0x80])  // a continuation byte without a lead
        assertInvalid([0xBF, 0x80])
        assertInvalid([0xC3, 0x41])  // lead followed by ASCII
        assertInvalid([0xE2, 0x28, 0xA1])
    }

    func testSequenceCutOffByTheEndOfInput() {
        XCTAssertEqual(scanError([0x22, 0xE2, 0x82]), JSONSyntaxError(reason: .unexpectedEnd, offset: 3))
        XCTAssertEqual(scanError([0x22, 0xC3]), JSONSyntaxError(reason: .unexpectedEnd, offset: 2))
    }

    func testEveryTwoByteSequenceMatchesTheStandardLibrary() {
        // Exhaustive over lead and second byte, with a valid trailer where more bytes are needed; the standard
        // library's own validator is the reference.
        for lead in UInt8(0x80)...0xFF {
            for second in UInt8(0x00)...0xFF {
                var sequence = [lead, second]
                if lead >= 0xE0 { sequence.append(0x80) }
                if lead >= 0xF0 { sequence.append(0x80) }
                let valid = String(validating: sequence, as: UTF8.self) != nil
                let accepted = scanError(quoted(sequence)) == nil
                if valid != accepted {
                    XCTFail("\(sequence): scanner accepted=\(accepted), stdlib valid=\(valid)")
                    return
                }
            }
        }
    }
}
