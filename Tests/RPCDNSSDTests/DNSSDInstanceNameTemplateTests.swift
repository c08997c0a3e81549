import RPCDNSSD
import XCTest

final class DNSSDInstanceNameTemplateTests: XCTestCase {
    func testDefaultIsServiceOnHost() {
        XCTAssertEqual(DNSSDInstanceNameTemplate.default.expand(service: "calc", host: "build-7"), "calc on build-7")
    }

    func testSpecifiers() throws {
        let template = try DNSSDInstanceNameTemplate(parsing: "%h/%s: 100%% %s")
        XCTAssertEqual(template.expand(service: "kv", host: "box"), "box/kv: 100% kv")
        XCTAssertEqual(template.text, "%h/%s: 100%% %s")
    }

    func testUnknownSpecifiersAndMissingServiceAreRefused() {
        XCTAssertThrowsError(try DNSSDInstanceNameTemplate(parsing: "%s on %H")) { error in
            XCTAssertEqual("\(error)", "invalid instance name template '%s on %H': unknown specifier %H; use %s (service), %h (host name) or %% (a percent sign)")
        }
        XCTAssertThrowsError(try DNSSDInstanceNameTemplate(parsing: "%s 100%")) { error in
            XCTAssertTrue("\(error)".contains("unknown specifier a lone % at the end"), "\(error)")
        }
        XCTAssertThrowsError(try DNSSDInstanceNameTemplate(parsing: "rpcd on %h")) { error in
            XCTAssertTrue("\(error)".contains("it needs %s"), "\(error)")
        }
        XCTAssertThrowsError(try DNSSDInstanceNameTemplate(parsing: ""))
        XCTAssertThrowsError(try DNSSDInstanceNameTemplate(parsing: "%%s"), "%%s is a literal '%s', not the service")
    }

    func testExpansionStaysWithinOneLabel() throws {
        let template = try DNSSDInstanceNameTemplate(parsing: "%s on %h")
        let name = template.expand(service: "calc", host: String(repeating: "h", count: 80))
        XCTAssertEqual(name.utf8.count, 63)
        XCTAssertTrue(name.hasPrefix("calc on hhh"))
    }
}
