import RPCProtocol
import XCTest

final class NameRuleTests: XCTestCase {
    func testServiceNames() {
        for valid in ["calc", "kv", "a", "my-service", "x1", "abcdefghijklmno", "1a"] {
            XCTAssertTrue(ServiceName.isValid(valid), valid)
        }
        let invalid: [(String, String)] = [
            ("", "empty service name"), ("abcdefghijklmnop", "16 characters is too long"),
            ("-calc", "starts or ends with a hyphen"), ("ca--lc", "two hyphens in a row"), ("123", "no letter"),
            ("ca_lc", "invalid character"), ("Calc", "upper-case letter"), ("ca.lc", "invalid character"),
        ]
        for (name, problem) in invalid {
            XCTAssertFalse(ServiceName.isValid(name), name)
            XCTAssertEqual(ServiceName.problem(with: name, allowingUpperCase: false), problem, name)
        }
        XCTAssertNil(ServiceName.problem(with: "Calc", allowingUpperCase: true))
    }

    func testMemberNames() {
        for valid in ["add", "setLogLevel", "a_1", "X", String(repeating: "a", count: 64)] {
            XCTAssertTrue(MemberName.isValid(valid), valid)
        }
        for invalid in ["", "1a", "_a", "a-b", "a.b", "ä", String(repeating: "a", count: 65)] {
            XCTAssertFalse(MemberName.isValid(invalid), invalid)
        }
    }
}
