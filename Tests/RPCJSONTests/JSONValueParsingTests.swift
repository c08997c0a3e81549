import RPCJSON
import XCTest

/// Building trees with `JSONValue(parsing:)`.
final class JSONValueParsingTests: XCTestCase {
    func testParsesEveryKind() throws {
        let value = try JSONValue(parsing: #" {"n": null, "t": true, "f": false, "i": -12, "d": 1.5e3, "s": "x\ny", "a": [1, [], {}], "o": {"k": "v"}} "#)
        XCTAssertEqual(
            value,
            .object([
                "n": .null, "t": .bool(true), "f": .bool(false), "i": .number("-12"), "d": .number("1.5e3"),
                "s": .string("x\ny"), "a": .array([.number("1"), .array([]), .object([:])]),
                "o": .object(["k": .string("v")]),
            ]))
    }

    /// `visitTopLevel`: an object's members in order, repeats included, an array's elements without keys, a
    /// scalar returned; invalid text and too deep nesting refused as `init(parsing:)` refuses them.
    func testVisitingTheTopLevelMemberByMember() throws {
        func visit(_ text: String, maxDepth: Int = 512) throws -> (JSONTopLevel, [String]) {
            var seen: [String] = []
            let bytes = Array(text.utf8)
            let top = try bytes.withUnsafeBytes { buffer in
                try JSONValue.visitTopLevel(buffer, maxDepth: maxDepth) { key, value in seen.append("\(key ?? "-")=\(value.jsonText)") }
            }
            return (top, seen)
        }
        let (object, members) = try visit(#" {"b": [1, {"c": null}], "a": "x", "b": 2} "#)
        guard case .object = object else { return XCTFail("\(object)") }
        XCTAssertEqual(members, [#"b=[1,{"c":null}]"#, #"a="x""#, "b=2"])
        let (array, elements) = try visit("[true, [], {}]")
        guard case .array = array else { return XCTFail("\(array)") }
        XCTAssertEqual(elements, ["-=true", "-=[]", "-={}"])
        XCTAssertEqual(try visit("{}").1, [])
        guard case .scalar(let scalar) = try visit(" 12 ").0 else { return XCTFail("a scalar") }
        XCTAssertEqual(scalar, .number("12"))
        for invalid in ["{\"a\":1,}", "[1] 2", "", "{\"a\" 1}"] {
            XCTAssertThrowsError(try visit(invalid), invalid) { XCTAssertTrue($0 is JSONSyntaxError, "\($0)") }
        }
        XCTAssertThrowsError(try visit("[[[1]]]", maxDepth: 2)) { XCTAssertTrue($0 is JSONSyntaxError, "\($0)") }
        XCTAssertNoThrow(try visit("[[1]]", maxDepth: 2))
    }

    func testParsesScalarsAtTopLevel() throws {
        XCTAssertEqual(try JSONValue(parsing: "null"), .null)
        XCTAssertEqual(try JSONValue(parsing: " true "), .bool(true))
        XCTAssertEqual(try JSONValue(parsing: "\"\\u00e9\""), .string("é"))
        XCTAssertEqual(try JSONValue(parsing: "-0"), .number("-0"))
    }

    func testNumberLiteralsAreKeptExactly() throws {
        for literal in ["123456789012345678901234567890", "-0.0e-5", "1E+2", "0.10", "1e999", "-9223372036854775809"] {
            XCTAssertEqual(try JSONValue(parsing: literal), .number(literal))
            XCTAssertEqual(try JSONValue(parsing: "[\(literal)]")[0], .number(literal))
        }
    }

    func testAllThreeInputFormsAgree() throws {
        let text = #"{"a":[1,"é",{"b":null}]}"#
        let fromString = try JSONValue(parsing: text)
        let fromArray = try JSONValue(parsing: Array(text.utf8))
        let fromBuffer = try Array(text.utf8).withUnsafeBytes { try JSONValue(parsing: $0) }
        XCTAssertEqual(fromString, fromArray)
        XCTAssertEqual(fromString, fromBuffer)
        XCTAssertEqual(fromString["a"]?[1], "é")
    }

    func testRepeatedKeysKeepTheLastValue() throws {
        XCTAssertEqual(try JSONValue(parsing: #"{"a":1,"b":2,"a":3}"#), ["a": 3, "b": 2])
    }

    func testLargeContainers() throws {
        let count = 10_000
        let array = try JSONValue(parsing: "[" + (0..<count).map(String.init).joined(separator: ",") + "]")
        XCTAssertEqual(array.arrayValue?.count, count)
        XCTAssertEqual(array[count - 1], .number(count - 1))
        let object = try JSONValue(parsing: "{" + (0..<count).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}")
        XCTAssertEqual(object.objectValue?.count, count)
        XCTAssertEqual(object["k777"], 777)
    }

    func testErrorsMatchTheScanner() {
        // Parsing validates with the scanner first, so reasons and offsets are the scanner's.
        for input in ["", "[1,]", #"{"a" 1}"#, "01", "[1] x", "\"\u{1}\"", #""\x""#, "nul", "[[[", "{\"a\":}"] {
            XCTAssertThrowsError(try JSONValue(parsing: input), input.debugDescription) { error in
                XCTAssertEqual(error as? JSONSyntaxError, scanError(input), input.debugDescription)
            }
        }
        XCTAssertThrowsError(try JSONValue(parsing: [0x22, 0xED, 0xA0, 0x80, 0x22])) { error in
            XCTAssertEqual(error as? JSONSyntaxError, JSONSyntaxError(reason: .invalidUTF8, offset: 1))
        }
    }

    func testMaxDepthIsHonoured() throws {
        XCTAssertNoThrow(try JSONValue(parsing: "[[1]]", maxDepth: 2))
        XCTAssertThrowsError(try JSONValue(parsing: "[[[1]]]", maxDepth: 2)) { error in
            XCTAssertEqual(error as? JSONSyntaxError, JSONSyntaxError(reason: .tooDeep(limit: 2), offset: 2))
        }
    }
}
