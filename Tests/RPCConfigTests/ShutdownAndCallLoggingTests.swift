import RPCConfig
import XCTest

/// `LogCalls=`, `SlowCallThreshold=` and `ShutdownGracePeriod=` (added with the systemd integration).
final class ShutdownAndCallLoggingTests: XCTestCase {
    func testDefaults() {
        XCTAssertFalse(ServerConfiguration.defaults.logCalls)
        XCTAssertEqual(ServerConfiguration.defaults.slowCallThreshold, .seconds(1))
        XCTAssertEqual(ServerConfiguration.defaults.shutdownGracePeriod, .seconds(10))
    }

    func testValuesAreApplied() throws {
        let config = try configuration("[Server]\nLogCalls=yes\nSlowCallThreshold=250ms\nShutdownGracePeriod=25s\n")
        XCTAssertTrue(config.logCalls)
        XCTAssertEqual(config.slowCallThreshold, .milliseconds(250))
        XCTAssertEqual(config.shutdownGracePeriod, .seconds(25))
    }

    func testZeroOrInfinityDisablesSlowCallLogging() throws {
        XCTAssertNil(try configuration("[Server]\nSlowCallThreshold=0\n").slowCallThreshold)
        XCTAssertNil(try configuration("[Server]\nSlowCallThreshold=infinity\n").slowCallThreshold)
    }

    func testEmptyAssignmentsResetToDefaults() throws {
        XCTAssertEqual(try configuration("[Server]\nLogCalls=yes\nLogCalls=\nShutdownGracePeriod=1s\nShutdownGracePeriod=\n"), .defaults)
    }

    func testErrorsNameFileLineAndRange() {
        XCTAssertEqual(
            configError { try configuration("[Server]\nShutdownGracePeriod=1min\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: value 1min for ShutdownGracePeriod= is out of range: expected a time span from 0 to 25s (rpcd.service's TimeoutStopSec=30s must outlast it)")
        XCTAssertEqual(
            configError { try configuration("[Server]\n\nShutdownGracePeriod=infinity\n") }?.description,
            "/etc/rpcd/rpcd.conf:3: value infinity for ShutdownGracePeriod= is out of range: expected a time span from 0 to 25s (rpcd.service's TimeoutStopSec=30s must outlast it)")
        XCTAssertEqual(
            configError { try configuration("[Server]\nLogCalls=sometimes\n") }?.description.hasPrefix(
                "/etc/rpcd/rpcd.conf:2: invalid value 'sometimes' for LogCalls=:"),
            true)
        XCTAssertEqual(
            configError { try configuration("[Server]\nSlowCallThreshold=fast\n") }?.description.hasPrefix(
                "/etc/rpcd/rpcd.conf:2: invalid value 'fast' for SlowCallThreshold=:"),
            true)
    }
}
