import RPCJSON
import XCTest

/// Decoding, comparing and quoting string tokens.
final class JSONStringTests: XCTestCase {
    func testDecodeEveryEscape() {
        XCTAssertEqual(decodeToken(#""plain""#), "plain")
        XCTAssertEqual(decodeToken(#""""#), "")
        XCTAssertEqual(decodeToken(#""\" \\ \/ \b \f \n \r \t""#), "\" \\ / \u{8} \u{C} \n \r \t")
        XCTAssertEqual(decodeToken(#""\u0041\u00e9\u00E9\u20AC\u0000""#), "Aéé€\u{0}")
        XCTAssertEqual(decodeToken(#""a\u0062c""#), "abc")
    }

    func testDecodeSurrogatePairs() {
        XCTAssertEqual(decodeToken(#""\ud83d\ude00""#), "😀")
        XCTAssertEqual(decodeToken(#""\uD83D\uDE00!""#), "😀!")
        XCTAssertEqual(decodeToken(#""\udbff\udfff""#), "\u{10FFFF}")
    }

    func testLoneSurrogatesDecodeToReplacementCharacters() {
        XCTAssertEqual(decodeToken(#""\ud800""#), "\u{FFFD}")
        XCTAssertEqual(decodeToken(#""\udc00x""#), "\u{FFFD}x")
        XCTAssertEqual(decodeToken(#""\ud800\ud800""#), "\u{FFFD}\u{FFFD}")
        XCTAssertEqual(decodeToken(#""\ud800\n""#), "\u{FFFD}\n")
        XCTAssertEqual(decodeToken(#""\udc00\ud800""#), "\u{FFFD}\u{FFFD}")
        XCTAssertEqual(decodeToken(#""\ud800\u0041""#), "\u{FFFD}A")
    }

    func testDecodeKeepsRawUTF8() {
        XCTAssertEqual(decodeToken("\"é😀\\n€\""), "é😀\n€")
    }

    func testDecodeOfMalformedTokensDoesNotCrash() {
        // Not validated input, so only "something sensible, no crash" is promised.
        XCTAssertEqual(decodeToken(#""\u12""#), "\u{FFFD}12")
        XCTAssertEqual(decodeToken(#""\"#), "\\")
        XCTAssertEqual(decodeToken("abc"), "abc")
        XCTAssertEqual(decodeToken(#""\u\u\u\u""#).unicodeScalars.count, 4)
        XCTAssertEqual(Array("\"\u{FF}\"".utf8).withUnsafeBytes { JSONString.decode($0) }, "\u{FF}")
        XCTAssertEqual(([0x22, 0xFF, 0x22] as [UInt8]).withUnsafeBytes { JSONString.decode($0) }, "\u{FFFD}")
    }

    func testTokenEqualsWithoutEscapes() {
        XCTAssertTrue(tokenEquals(#""method""#, "method"))
        XCTAssertFalse(tokenEquals(#""method""#, "methods"))
        XCTAssertFalse(tokenEquals(#""methods""#, "method"))
        XCTAssertFalse(tokenEquals(#""Method""#, "method"))
        XCTAssertTrue(tokenEquals(#""""#, ""))
        XCTAssertFalse(tokenEquals(#""""#, "a"))
        XCTAssertTrue(tokenEquals(#""2.0""#, "2.0"))
        XCTAssertTrue(tokenEquals(#""a""#, "a"))  // a single-scalar StaticString has no pointer representation
        XCTAssertTrue(tokenEquals("\"é\"", "é"))
    }

    func testTokenEqualsWithEscapes() {
        XCTAssertTrue(tokenEquals(#""\u006dethod""#, "method"))
        XCTAssertTrue(tokenEquals(#""metho\u0064""#, "method"))
        XCTAssertTrue(tokenEquals(#""\u0032\u002e\u0030""#, "2.0"))
        XCTAssertFalse(tokenEquals(#""\u006dethod""#, "methods"))
        XCTAssertFalse(tokenEquals(#""\u006dethodx""#, "method"))
        XCTAssertFalse(tokenEquals(#""\u006Eethod""#, "method"))
        XCTAssertTrue(tokenEquals(#""a\nb""#, "a\nb"))
        XCTAssertTrue(tokenEquals(#""\u00e9""#, "é"))
        XCTAssertTrue(tokenEquals(#""\ud83d\ude00""#, "😀"))
        XCTAssertFalse(tokenEquals(#""\ud83d""#, "😀"))
        XCTAssertTrue(tokenEquals(#""\"""#, "\""))
    }

    func testAppendQuotedEscapesQuotesBackslashAndControlCharacters() {
        XCTAssertEqual(String(decoding: quotedBytes("a\"b\\c/d"), as: UTF8.self), #""a\"b\\c/d""#)
        XCTAssertEqual(
            String(decoding: quotedBytes("\u{8}\u{C}\n\r\t\u{0}\u{1F}\u{7F}"), as: UTF8.self),
            #""\b\f\n\r\t\u0000\u001f"# + "\u{7F}\"")
        XCTAssertEqual(quotedBytes(""), [0x22, 0x22])
    }

    func testAppendQuotedWritesNonASCIIAsUTF8() {
        XCTAssertEqual(quotedBytes("é😀"), [0x22, 0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80, 0x22])
    }

    func testAppendQuotedAcceptsSubstringsAndAppends() {
        let text = "xx\"inner\nyy"
        var output = Array("prefix:".utf8)
        JSONString.appendQuoted(text.dropFirst(2).dropLast(2), to: &output)
        XCTAssertEqual(String(decoding: output, as: UTF8.self), #"prefix:"\"inner\n""#)
    }

    func testQuotedOutputScansAndDecodesBack() {
        var every = String((0..<0x80).map { Character(Unicode.Scalar(UInt8($0))) })
        every += "é😀\u{10FFFF}\u{FFFD}"
        for text in [every, "", "\\\\\"\"", String(repeating: "ab\n", count: 50)] {
            let bytes = quotedBytes(text)
            XCTAssertEqual(scanDocument(bytes).map { $0.kind }, .success(.string))
            XCTAssertEqual(bytes.withUnsafeBytes { JSONString.decode($0) }, text)
        }
    }
}
