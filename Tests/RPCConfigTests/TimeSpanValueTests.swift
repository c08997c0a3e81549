import RPCConfig
import XCTest

final class TimeSpanValueTests: XCTestCase {
    private func span(_ text: String) throws(ConfigError) -> Duration? {
        try entry(text, key: "IdleTimeout").timeSpanValue()
    }

    func testSingleUnits() throws {
        XCTAssertEqual(try span("30s"), .seconds(30))
        XCTAssertEqual(try span("5min"), .seconds(300))
        XCTAssertEqual(try span("2h"), .seconds(7200))
        XCTAssertEqual(try span("500ms"), .milliseconds(500))
        XCTAssertEqual(try span("250us"), .microseconds(250))
        XCTAssertEqual(try span("1d"), .seconds(86400))
        XCTAssertEqual(try span("1w"), .seconds(604_800))
    }

    func testUnitSpellingsOfSystemdTime() throws {
        for text in ["1s", "1sec", "1second", "1seconds"] { XCTAssertEqual(try span(text), .seconds(1), text) }
        for text in ["1m", "1min", "1minute", "1minutes"] { XCTAssertEqual(try span(text), .seconds(60), text) }
        for text in ["1h", "1hr", "1hour", "1hours"] { XCTAssertEqual(try span(text), .seconds(3600), text) }
        for text in ["1ms", "1msec"] { XCTAssertEqual(try span(text), .milliseconds(1), text) }
        for text in ["1us", "1usec", "1\u{B5}s", "1\u{3BC}s"] { XCTAssertEqual(try span(text), .microseconds(1), text) }
        // Case matters: M is a month (30.44 days), m a minute; a year is 365.25 days.
        XCTAssertEqual(try span("1M"), .seconds(2_629_800))
        XCTAssertEqual(try span("1month"), .seconds(2_629_800))
        XCTAssertEqual(try span("1y"), .seconds(31_557_600))
    }

    func testBareNumbersAreSeconds() throws {
        XCTAssertEqual(try span("90"), .seconds(90))
        XCTAssertEqual(try span("0"), .zero)
    }

    func testCompoundAndFractionalSpans() throws {
        XCTAssertEqual(try span("1min 30s"), .seconds(90))
        XCTAssertEqual(try span("1min30s"), .seconds(90))
        XCTAssertEqual(try span("2 min"), .seconds(120))
        XCTAssertEqual(try span("1min 30"), .seconds(90))  // a bare number is seconds in compounds too
        XCTAssertEqual(try span("1h 1min 1s 1ms"), .milliseconds(3_661_001))
        XCTAssertEqual(try span("1.5h"), .seconds(5400))
        XCTAssertEqual(try span("0.25s"), .milliseconds(250))
        XCTAssertEqual(try span("1.0000001s"), .seconds(1))  // below systemd's microsecond resolution
    }

    func testInfinityIsNil() throws {
        XCTAssertNil(try span("infinity"))
        XCTAssertNotNil(configError { try span("infinityx") })
        XCTAssertNotNil(configError { try span("Infinity") })
    }

    func testMalformedSpansAreRejectedWithExamples() {
        for text in ["", "x", "5x", "5 s x", "3.", "3.s", "1.2.3", "min", "1 min s"] {
            XCTAssertEqual(
                configError { try span(text) }?.message,
                "invalid value '\(text)' for IdleTimeout=: expected a time span such as 30s, 5min, 1min 30s or 500ms, or infinity",
                text)
        }
    }

    func testNegativeSpansAreRejected() {
        XCTAssertEqual(
            configError { try span("-5s") }?.description,
            "/test.conf:3: invalid value '-5s' for IdleTimeout=: a time span cannot be negative")
        XCTAssertNotNil(configError { try span("1min -5s") })
    }

    func testOverflowIsRejected() {
        for text in ["99999999999999999999s", "999999999999y", "9223372036854775807s"] {
            XCTAssertEqual(
                configError { try span(text) }?.message,
                "value \(text) for IdleTimeout= is out of range: the time span is too long", text)
        }
    }
}
