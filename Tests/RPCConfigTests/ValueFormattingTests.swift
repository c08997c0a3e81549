@testable import RPCConfig
import XCTest

/// The formatters `rendered()` uses: shortest exact text, and always text the parsers read back.
final class ValueFormattingTests: XCTestCase {
    func testSizesUseTheLargestExactSuffix() {
        XCTAssertEqual(ValueSyntax.formatSize(0), "0")
        XCTAssertEqual(ValueSyntax.formatSize(64), "64")
        XCTAssertEqual(ValueSyntax.formatSize(1000), "1000")
        XCTAssertEqual(ValueSyntax.formatSize(1024), "1K")
        XCTAssertEqual(ValueSyntax.formatSize(1536), "1536")
        XCTAssertEqual(ValueSyntax.formatSize(16 << 20), "16M")
        XCTAssertEqual(ValueSyntax.formatSize(1 << 30), "1G")
        XCTAssertEqual(ValueSyntax.formatSize(3 << 40), "3T")
        XCTAssertEqual(ValueSyntax.formatSize(Int.max), String(Int.max))
    }

    func testSizesRoundTrip() {
        for bytes in [0, 1, 64, 1023, 1024, 1025, 16 << 20, (1 << 30) + 1, 5 << 50, Int.max] {
            XCTAssertEqual(try ValueSyntax.size(ValueSyntax.formatSize(bytes)).get(), bytes)
        }
    }

    func testTimeSpansBreakIntoUnits() {
        XCTAssertEqual(ValueSyntax.formatTimeSpan(nil), "infinity")
        XCTAssertEqual(ValueSyntax.formatTimeSpan(.zero), "0")
        XCTAssertEqual(ValueSyntax.formatTimeSpan(.seconds(300)), "5min")
        XCTAssertEqual(ValueSyntax.formatTimeSpan(.seconds(90)), "1min 30s")
        XCTAssertEqual(ValueSyntax.formatTimeSpan(.milliseconds(1500)), "1s 500ms")
        XCTAssertEqual(ValueSyntax.formatTimeSpan(.seconds(129_600)), "1d 12h")
        XCTAssertEqual(ValueSyntax.formatTimeSpan(.microseconds(3_600_000_001)), "1h 1us")
        XCTAssertEqual(ValueSyntax.formatTimeSpan(.seconds(-5)), "0")
        XCTAssertEqual(ValueSyntax.formatTimeSpan(.nanoseconds(1500)), "1us")
    }

    func testTimeSpansRoundTrip() {
        let spans: [Duration?] = [nil, .zero, .microseconds(1), .milliseconds(999), .seconds(59), .seconds(3601), .seconds(10_000_000)]
        for span in spans {
            XCTAssertEqual(try ValueSyntax.timeSpan(ValueSyntax.formatTimeSpan(span)).get(), span)
        }
    }
}
