import RPCConfig
import XCTest

final class IntegerValueTests: XCTestCase {
    func testValuesInsideTheRangeIncludingBounds() throws {
        XCTAssertEqual(try entry("1").integerValue(in: 1...1024), 1)
        XCTAssertEqual(try entry("1024").integerValue(in: 1...1024), 1024)
        XCTAssertEqual(try entry("77").integerValue(in: 1...1024), 77)
        XCTAssertEqual(try entry("-5").integerValue(in: -10...10), -5)
        XCTAssertEqual(try entry("007").integerValue(in: 1...10), 7)
    }

    func testValuesOutsideTheRangeAreOutOfRange() {
        XCTAssertEqual(
            configError { try entry("0", key: "Threads").integerValue(in: 1...1024) }?.description,
            "/test.conf:3: value 0 for Threads= is out of range: expected an integer from 1 to 1024")
        XCTAssertEqual(
            configError { try entry("1025", key: "Threads").integerValue(in: 1...1024) }?.message,
            "value 1025 for Threads= is out of range: expected an integer from 1 to 1024")
        XCTAssertEqual(
            configError { try entry("-1", key: "Threads").integerValue(in: 1...1024) }?.message,
            "value -1 for Threads= is out of range: expected an integer from 1 to 1024")
    }

    func testOverflowIsOutOfRangeNotACrash() {
        XCTAssertEqual(
            configError { try entry("99999999999999999999999", key: "N").integerValue(in: 1...10) }?.message,
            "value 99999999999999999999999 for N= is out of range: expected an integer from 1 to 10")
    }

    func testNonNumbersAreRejected() {
        for text in ["", "abc", "1.5", "+5", " 5", "5 ", "0x10", "1e3", "-", "1_000"] {
            XCTAssertEqual(
                configError { try entry(text, key: "N").integerValue(in: 0...100_000) }?.message,
                "invalid value '\(text)' for N=: expected an integer from 0 to 100000", text)
        }
    }
}
