import Foundation
import RPCJSON
import XCTest

/// Codable bridging through Foundation's JSON coders; lossy for numbers by design.
final class JSONValueCodableTests: XCTestCase {
    private struct Envelope: Codable, Equatable {
        var name: String
        var payload: JSONValue
    }

    private func roundTrip(_ value: JSONValue) throws -> JSONValue {
        let data = try JSONEncoder().encode(Envelope(name: "n", payload: value))
        return try JSONDecoder().decode(Envelope.self, from: data).payload
    }

    func testStructuresSurviveCodable() throws {
        let value: JSONValue = ["a": [1, -2, 2.5, "s", true, false, nil], "b": [:], "c": []]
        XCTAssertEqual(try roundTrip(value), value)
    }

    func testEncodedFormIsPlainJSON() throws {
        let value: JSONValue = ["x": [1, 1.5, "s", nil]]
        let data = try JSONEncoder().encode(value)
        XCTAssertEqual(try JSONValue(parsing: Array(data)), ["x": [1, 1.5, "s", nil]])
    }

    func testNumbersAreIntFirstThenDouble() throws {
        XCTAssertEqual(try roundTrip(.number("3.0")), .number("3"), "an exact integer is encoded as Int")
        XCTAssertEqual(try roundTrip(.number("-7")), .number("-7"))
        // Above 2^53 only the Int path is exact, so this fails if integers went through Double.
        XCTAssertEqual(try roundTrip(.number("9007199254740993")), .number("9007199254740993"))
        XCTAssertEqual(try roundTrip(.number("0.5")), .number("0.5"))
    }

    func testCodableLosesExactness() throws {
        let big = try roundTrip(.number("123456789012345678901234567890"))
        XCTAssertNotEqual(big, .number("123456789012345678901234567890"))
        XCTAssertEqual(big.doubleValue, 1.2345678901234568e29)
    }

    func testLiteralsBeyondDoubleAreEncodedAsStrings() throws {
        XCTAssertEqual(try roundTrip(.number("1e400")), .string("1e400"))
    }

    func testBoolsStayBools() throws {
        XCTAssertEqual(try roundTrip([true, false, 1, 0]), [true, false, 1, 0])
    }
}
