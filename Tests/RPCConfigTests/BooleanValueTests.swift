import RPCConfig
import XCTest

final class BooleanValueTests: XCTestCase {
    func testTrueSpellings() throws {
        for text in ["1", "yes", "y", "true", "t", "on", "YES", "True", "On", "Y"] {
            XCTAssertEqual(try entry(text).boolValue(), true, text)
        }
    }

    func testFalseSpellings() throws {
        for text in ["0", "no", "n", "false", "f", "off", "NO", "False", "OFF", "N"] {
            XCTAssertEqual(try entry(text).boolValue(), false, text)
        }
    }

    func testOtherWordsAreRejected() {
        for text in ["", "2", "yess", "enable", "disabled", "-1", "1 "] {
            XCTAssertNotNil(configError { try entry(text).boolValue() }, text)
        }
    }

    func testErrorNamesFileLineKeyAndForms() {
        XCTAssertEqual(
            configError { try entry("maybe", key: "Enabled").boolValue() }?.description,
            "/test.conf:3: invalid value 'maybe' for Enabled=: expected a boolean: yes or no (also true/false, on/off, 1/0)")
    }
}
