import RPCConfig
import XCTest

final class LogLevelValueTests: XCTestCase {
    func testEveryLevelNameParses() throws {
        XCTAssertEqual(
            LogLevelSetting.allCases.map(\.rawValue), ["trace", "debug", "info", "notice", "warning", "error", "critical"])
        for level in LogLevelSetting.allCases {
            XCTAssertEqual(try entry(level.rawValue).logLevelValue(), level)
        }
    }

    func testNamesAreCaseInsensitive() throws {
        XCTAssertEqual(try entry("WARNING").logLevelValue(), .warning)
        XCTAssertEqual(try entry("Debug").logLevelValue(), .debug)
    }

    func testOtherNamesAreRejectedListingTheValidOnes() {
        XCTAssertEqual(
            configError { try entry("warn", key: "LogLevel").logLevelValue() }?.description,
            "/test.conf:3: invalid value 'warn' for LogLevel=: expected one of trace, debug, info, notice, warning, error, critical")
        XCTAssertNotNil(configError { try entry("").logLevelValue() })
        XCTAssertNotNil(configError { try entry("7").logLevelValue() })
    }
}
