import RPCConfig
import XCTest

final class SizeValueTests: XCTestCase {
    private let any = 0...Int.max

    private func size(_ text: String) throws(ConfigError) -> Int {
        try entry(text, key: "MaxFrameSize").sizeValue(in: any)
    }

    func testPlainBytes() throws {
        XCTAssertEqual(try size("0"), 0)
        XCTAssertEqual(try size("65536"), 65536)
        XCTAssertEqual(try size("512B"), 512)
    }

    func testBinarySuffixes() throws {
        XCTAssertEqual(try size("1K"), 1024)
        XCTAssertEqual(try size("16M"), 16 * 1024 * 1024)
        XCTAssertEqual(try size("1G"), 1 << 30)
        XCTAssertEqual(try size("2T"), 2 << 40)
        XCTAssertEqual(try size("1P"), 1 << 50)
        XCTAssertEqual(try size("1E"), 1 << 60)
    }

    func testSystemdExtras() throws {
        XCTAssertEqual(try size("1.5K"), 1536)
        XCTAssertEqual(try size("0.5G"), 1 << 29)
        XCTAssertEqual(try size("10.M"), 10 << 20)
        XCTAssertEqual(try size("16 M"), 16 << 20)
        XCTAssertEqual(try size("1G 512M"), (1 << 30) + (512 << 20))
        XCTAssertEqual(try size("1K 5"), 1029)
    }

    func testMalformedSizesAreRejectedWithAnExample() {
        // No lowercase, no MB/MiB, no ascending compound: exactly what systemd refuses.
        for text in ["", "M", "abc", "16m", "16MB", "16MiB", "1M 1G", "1 2", "16M x", "+5", ".5K", "1..5K"] {
            XCTAssertEqual(
                configError { try size(text) }?.message,
                "invalid value '\(text)' for MaxFrameSize=: expected a size in bytes with an optional K, M, G or T suffix (base 1024), such as 16M",
                text)
        }
    }

    func testNegativeSizesAreRejected() {
        XCTAssertEqual(
            configError { try entry("-1", key: "MaxFrameSize").sizeValue(in: 64...(1 << 30)) }?.description,
            "/test.conf:3: invalid value '-1' for MaxFrameSize=: a size cannot be negative; expected a size from 64 to 1G")
        XCTAssertNotNil(configError { try size("1K -1") })
    }

    func testOverflowIsRejected() {
        // The largest whole number with a fraction trapped instead (the config fuzzer's find).
        let fuzzed = ["18446744073709551615.5", "018446744073709551615.000001G", "17179869183.5G", "17179869184G"]
        for text in ["16E", "8E", "18446744073709551616", "99999999999999999999K", "7E 1023P 1024T"] + fuzzed {
            XCTAssertEqual(
                configError { try size(text) }?.message,
                "value \(text) for MaxFrameSize= is out of range: expected a size from 0 to \(Int.max)", text)
        }
        XCTAssertEqual(try size("7E 1023P"), (7 << 60) + (1023 << 50))
    }

    func testRangeBoundsAreInclusive() throws {
        let range = 64...(1 << 30)
        XCTAssertEqual(try entry("64").sizeValue(in: range), 64)
        XCTAssertEqual(try entry("1G").sizeValue(in: range), 1 << 30)
        XCTAssertEqual(
            configError { try entry("63", key: "MaxFrameSize").sizeValue(in: range) }?.message,
            "value 63 for MaxFrameSize= is out of range: expected a size from 64 to 1G")
        XCTAssertEqual(
            configError { try entry("1073741825", key: "MaxFrameSize").sizeValue(in: range) }?.message,
            "value 1073741825 for MaxFrameSize= is out of range: expected a size from 64 to 1G")
    }
}
