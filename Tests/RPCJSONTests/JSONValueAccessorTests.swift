import RPCJSON
import XCTest

/// Accessors, subscripts, literals and number conversions.
final class JSONValueAccessorTests: XCTestCase {
    func testKinds() {
        let values: [(JSONValue, JSONKind)] = [
            (nil, .null), (true, .bool), (1, .number), (1.5, .number), ("s", .string), ([1], .array), (["a": 1], .object),
        ]
        for (value, kind) in values { XCTAssertEqual(value.kind, kind, "\(value)") }
    }

    func testTypedAccessorsReturnNilForOtherKinds() {
        let string: JSONValue = "x"
        XCTAssertEqual(string.stringValue, "x")
        XCTAssertNil(string.boolValue)
        XCTAssertNil(string.intValue)
        XCTAssertNil(string.doubleValue)
        XCTAssertNil(string.arrayValue)
        XCTAssertNil(string.objectValue)
        XCTAssertNil(JSONValue.number("1").stringValue, "numbers are not strings")
        XCTAssertNil(JSONValue.string("1").intValue, "strings are not numbers")
        XCTAssertEqual(JSONValue.bool(false).boolValue, false)
        XCTAssertEqual(JSONValue.array([1]).arrayValue, [1])
        XCTAssertEqual(JSONValue.object(["a": nil]).objectValue, ["a": .null])
    }

    func testSubscripts() {
        let value: JSONValue = ["list": [10, 20], "null": nil]
        XCTAssertEqual(value["list"]?[1], 20)
        XCTAssertNil(value["list"]?[2])
        XCTAssertNil(value["list"]?[-1])
        XCTAssertEqual(value["null"], .null, "a null member is present")
        XCTAssertNil(value["missing"])
        XCTAssertNil(value[0], "index into an object")
        XCTAssertNil(value["list"]?["key"], "key into an array")
    }

    func testIntValueIsExact() {
        let exact: [(String, Int)] = [
            ("0", 0), ("-0", 0), ("42", 42), ("-42", -42), ("3.0", 3), ("3.000", 3), ("1e3", 1000), ("1.5e1", 15),
            ("2500e-2", 25), ("0.0e-99999999999999999999", 0), ("9223372036854775807", .max),
            ("-9223372036854775808", .min), ("9.223372036854775807e18", .max), ("00.5e1".dropFirst().description, 5),
        ]
        for (literal, int) in exact { XCTAssertEqual(JSONValue.number(literal).intValue, int, literal) }
        let inexact = [
            "1.5", "0.1", "1e-1", "9223372036854775808", "-9223372036854775809", "1e19", "123456789012345678901234567890",
            "1e99999999999999999999", "25e-2", "not a number", "",
        ]
        for literal in inexact { XCTAssertNil(JSONValue.number(literal).intValue, literal) }
    }

    func testDoubleValue() {
        XCTAssertEqual(JSONValue.number("-1.5e3").doubleValue, -1500)
        XCTAssertEqual(JSONValue.number("7").doubleValue, 7)
        XCTAssertEqual(JSONValue.number("1e-400").doubleValue, 0)
        XCTAssertNil(JSONValue.number("1e400").doubleValue, "beyond Double's range")
        XCTAssertEqual(JSONValue.number("123456789012345678901234567890").doubleValue, 1.2345678901234568e29)
    }

    func testIntConvenience() {
        XCTAssertEqual(JSONValue.number(Int.min), .number("-9223372036854775808"))
        XCTAssertEqual(JSONValue.number(Int.min).intValue, .min)
        XCTAssertEqual(JSONValue.number(0), .number("0"))
    }

    func testNumberEqualityIsTextual() {
        XCTAssertNotEqual(JSONValue.number("1"), JSONValue.number("1.0"))
        XCTAssertEqual(JSONValue.number("1").intValue, JSONValue.number("1.0").intValue)
        XCTAssertEqual(Set<JSONValue>([.number("1"), .number("1"), .number("1e0")]).count, 2)
    }

    func testLiterals() {
        let value: JSONValue = ["a": [nil, true, 3, 0.5, "s"], "a2": ["k": "v", "k": "w"]]
        XCTAssertEqual(
            value,
            .object([
                "a": .array([.null, .bool(true), .number("3"), .number("0.5"), .string("s")]),
                "a2": .object(["k": .string("w")]),
            ]))
    }

    func testNumberLiteralValidation() {
        for valid in ["0", "-0", "1.5e-3", "1E+2", "123456789012345678901234567890"] {
            XCTAssertTrue(JSONValue.isValidNumberLiteral(valid), valid)
        }
        for invalid in ["", "01", "1.", ".5", "+1", "1e", "NaN", " 1", "1 ", "0x1", "1_000"] {
            XCTAssertFalse(JSONValue.isValidNumberLiteral(invalid), invalid)
        }
    }
}
