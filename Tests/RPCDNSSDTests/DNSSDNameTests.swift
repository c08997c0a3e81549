import RPCDNSSD
import XCTest

final class DNSSDNameTests: XCTestCase {
    func testRFC6335ServiceNamesAreAccepted() throws {
        for name in ["rpcd", "calc", "kv", "a", "x-y-z", "abcdefghijklmno", "Calc", "h2", "1a"] {
            XCTAssertNoThrow(try DNSSDName.validateServiceName(name), name)
        }
    }

    func testNamesBreakingRFC6335AreRefusedWithTheReason() {
        let cases: [(String, String)] = [
            ("", "empty service name"),
            ("abcdefghijklmnop", "16 characters is too long"),
            ("-calc", "starts or ends with a hyphen"),
            ("calc-", "starts or ends with a hyphen"),
            ("ca--lc", "two hyphens in a row"),
            ("123", "no letter"),
            ("ca_lc", "invalid character"),
            ("ca.lc", "invalid character"),
            ("cälc", "invalid character"),
        ]
        for (name, problem) in cases {
            XCTAssertThrowsError(try DNSSDName.validateServiceName(name), name) { error in
                let text = "\(error)"
                XCTAssertTrue(text.hasPrefix("invalid service name '\(name)': \(problem); expected 1 to 15"), text)
            }
        }
    }

    func testTypesAndSubtypes() throws {
        XCTAssertEqual(try DNSSDName.serviceType("rpcd"), "_rpcd._tcp")
        XCTAssertEqual(try DNSSDName.serviceType("rpcd", transport: .udp), "_rpcd._udp")
        XCTAssertEqual(try DNSSDName.subtype("calc", of: "_rpcd._tcp"), "_calc._sub._rpcd._tcp")
        XCTAssertEqual(try RPCAdvertisement.subtype(for: "kv"), "_kv._sub._rpcd._tcp")
        XCTAssertThrowsError(try RPCAdvertisement.subtype(for: "much-too-long-name"))
        XCTAssertThrowsError(try DNSSDName.serviceType("a_b"))
    }

    func testTruncationKeepsWholeCharactersWithinOneLabel() {
        XCTAssertEqual(DNSSDName.truncated("short"), "short")
        let long = String(repeating: "x", count: 70)
        XCTAssertEqual(DNSSDName.truncated(long).utf8.count, 63)
        // 21 three-byte characters are 63 bytes; a 22nd does not fit, and no character is split.
        let wide = String(repeating: "€", count: 30)
        XCTAssertEqual(DNSSDName.truncated(wide), String(repeating: "€", count: 21))
        let mixed = "a" + String(repeating: "€", count: 30)
        XCTAssertEqual(DNSSDName.truncated(mixed), "a" + String(repeating: "€", count: 20))
        // No trailing blank after the cut.
        XCTAssertEqual(DNSSDName.truncated(String(repeating: "y", count: 62) + " z"), String(repeating: "y", count: 62))
    }
}
