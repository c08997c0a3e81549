import RPCJSON
import XCTest

/// Compact and pretty output, determinism, escaping and round-trips.
final class JSONValueSerializationTests: XCTestCase {
    private func text(_ value: JSONValue) -> String { value.jsonText }

    func testCompactOutputOfEveryKind() {
        let value: JSONValue = ["b": [1, 2.5, "x", true, false, nil, [:], []], "a": .number("-1.5e3")]
        XCTAssertEqual(text(value), #"{"a":-1.5e3,"b":[1,2.5,"x",true,false,null,{},[]]}"#)
        XCTAssertEqual(value.description, value.jsonText)
        XCTAssertEqual(value.serialized(), Array(value.jsonText.utf8))
    }

    func testKeysAreSortedByUTF8Bytes() {
        let value: JSONValue = ["b": 1, "a": 2, "B": 3, "aa": 4, "é": 5, "z": 6, "": 7, "😀": 8, "\u{FFFF}": 9]
        // 'B' (0x42) < 'a' (0x61); "é" (C3 A9) < U+FFFF (EF BF BF) < "😀" (F0 ...): raw UTF-8 order.
        XCTAssertEqual(text(value), #"{"":7,"B":3,"a":2,"aa":4,"b":1,"z":6,"é":5,""# + "\u{FFFF}" + #"":9,"😀":8}"#)
        // U+212B (E2 84 AB) normalizes to U+00C5, which Swift's `<` would put before U+00FF (C3 BF).
        XCTAssertEqual(text(["\u{212B}": 1, "\u{FF}": 2]), "{\"\u{FF}\":2,\"\u{212B}\":1}")
    }

    func testSerializationIsDeterministic() throws {
        var members: [String: JSONValue] = [:]
        for index in 0..<200 { members["key\(index)"] = .number(index) }
        let first = JSONValue.object(members).serialized()
        // A dictionary built in another order (and thus likely iterated in another order) gives the same bytes.
        var reversed: [String: JSONValue] = [:]
        for index in (0..<200).reversed() { reversed["key\(index)"] = .number(index) }
        XCTAssertEqual(JSONValue.object(reversed).serialized(), first)
        XCTAssertEqual(try JSONValue(parsing: first).serialized(), first)
    }

    func testStringEscaping() {
        XCTAssertEqual(text(.string("q\"b\\s/")), #""q\"b\\s/""#)
        XCTAssertEqual(text(.string("\u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1F} ")), #""\u0000\u0001\b\t\n\f\r\u001f ""#)
        XCTAssertEqual(text(.string("é😀")), "\"é😀\"")
        XCTAssertEqual(text(["k\"ey\n": "v"]), #"{"k\"ey\n":"v"}"#)
    }

    func testUnicodeEscapesDecodeAndSerializeAsUTF8() throws {
        let value = try JSONValue(parsing: #"["\ud83d\ude00", "\u00e9", "\ud800"]"#)
        XCTAssertEqual(value, ["😀", "é", "\u{FFFD}"])
        XCTAssertEqual(text(value), "[\"😀\",\"é\",\"\u{FFFD}\"]")
    }

    func testNumberLiteralsRoundTripExactly() throws {
        for literal in ["123456789012345678901234567890", "-0.0e-5", "-0", "1E+400", "0.1000000000000000000001", "2.50"] {
            let value = try JSONValue(parsing: " \(literal) ")
            XCTAssertEqual(text(value), literal)
            XCTAssertEqual(text(["id": value]), #"{"id":\#(literal)}"#)
        }
    }

    func testParseSerializeParseRoundTrips() throws {
        let documents = [
            #"{"jsonrpc":"2.0","method":"x","params":{"a":[1,{"b":[null,true]}],"c":"\u0000\t"},"id":123456789012345678901234567890}"#,
            #"[[[[]]],{},{"":{"":""}},-0.0e-5,1e5,"😀\ud83d\ude00"]"#,
            "  \"just a string\"  ", "0", "[1, 2 ,3]",
        ]
        for document in documents {
            let value = try JSONValue(parsing: document)
            let bytes = value.serialized()
            let reparsed = try JSONValue(parsing: bytes)
            XCTAssertEqual(reparsed, value, document)
            XCTAssertEqual(reparsed.serialized(), bytes, "serialization is a fixed point")
            XCTAssertEqual(try JSONValue(parsing: value.prettyPrinted()), value, "pretty output parses back")
        }
    }

    func testAppendAppendsWithoutReplacing() {
        var output = Array("x=".utf8)
        JSONValue.array([1, "a"]).append(to: &output)
        XCTAssertEqual(String(decoding: output, as: UTF8.self), #"x=[1,"a"]"#)
    }

    func testPrettyPrinting() {
        let value: JSONValue = ["name": "rpcd", "list": [1, [], ["k": nil]], "empty": [:]]
        XCTAssertEqual(
            value.prettyPrinted(),
            """
            {
              "empty": {},
              "list": [
                1,
                [],
                {
                  "k": null
                }
              ],
              "name": "rpcd"
            }
            """)
        XCTAssertEqual(JSONValue.number(3).prettyPrinted(), "3")
        XCTAssertEqual(JSONValue.array([]).prettyPrinted(), "[]")
    }

    func testDoubleFormatting() {
        let cases: [(Double, String)] = [
            (2.0, "2"), (-3.0, "-3"), (0.0, "0"), (-0.0, "-0"), (1.5, "1.5"), (0.1, "0.1"), (1e-5, "1e-05"),
            (123456.789, "123456.789"), (9_007_199_254_740_991.0, "9007199254740991"), (1e16, "1e+16"),
            (9_007_199_254_740_992.0, "9007199254740992.0"), (.greatestFiniteMagnitude, "1.7976931348623157e+308"),
            (.leastNonzeroMagnitude, "5e-324"),
        ]
        for (double, expected) in cases {
            let value = JSONValue.number(double)
            XCTAssertEqual(value, .number(expected), "\(double)")
            XCTAssertEqual(value.doubleValue, double, "\(double) reads back exactly")
            XCTAssertTrue(JSONValue.isValidNumberLiteral(expected), expected)
        }
        XCTAssertEqual(JSONValue.number(2.0), JSONValue.number(2), "integral doubles equal the same integer")
    }

    func testShortestRoundTripForRandomDoubles() throws {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            let double = Double(bitPattern: generator.next())
            guard double.isFinite else { continue }
            let value = JSONValue.number(double)
            let reparsed = try JSONValue(parsing: value.serialized())
            XCTAssertEqual(reparsed.doubleValue, double, "\(double)")
        }
    }
}

/// JSON has no NaN or infinity: such numbers never trap (issue 14: one overflowing result killed the daemon),
/// the checked serialization refuses them, and the plain one writes `null`.
final class UnrepresentableNumberTests: XCTestCase {
    func testNonFiniteDoublesAreRefusedNotTrapped() {
        for value in [Double.infinity, -Double.infinity, Double.nan, 1e308 * 10] {
            let json = JSONValue.number(value)
            XCTAssertThrowsError(try json.checkedSerialization(), "\(value)") { error in
                XCTAssertTrue("\(error)".hasPrefix("the value holds a number JSON cannot represent: "), "\(error)")
            }
            XCTAssertEqual(json.jsonText, "null")
        }
    }

    func testNestedAndTextualInvalidNumbersAreFound() {
        let nested: JSONValue = ["a": [1, ["b": .number(Double.infinity)]], "c": 2]
        XCTAssertEqual(nested.firstInvalidNumber, "inf")
        XCTAssertThrowsError(try nested.checkedSerialization())
        XCTAssertEqual(nested.jsonText, #"{"a":[1,{"b":null}],"c":2}"#)
        XCTAssertEqual(JSONValue.number("12abc").firstInvalidNumber, "12abc")
        XCTAssertNil(JSONValue.number("1e400").firstInvalidNumber, "a valid literal, though beyond Double")
        XCTAssertEqual(try JSONValue.array([1.5, -0.0]).checkedSerialization(), Array("[1.5,-0]".utf8))
    }

    func testCodableEncodingRefusesThem() {
        XCTAssertThrowsError(try JSONEncoder().encode(JSONValue.number(Double.nan)))
        XCTAssertThrowsError(try JSONEncoder().encode(JSONValue.number("nope")))
        XCTAssertEqual(try JSONEncoder().encode(JSONValue.number("1e400")), Data(#""1e400""#.utf8))
    }
}
