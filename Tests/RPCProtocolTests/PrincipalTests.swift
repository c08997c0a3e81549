import RPCProtocol
import XCTest

final class PrincipalTests: XCTestCase {
    func testEveryFormParsesAndPrintsBack() throws {
        for text in ["any", "local", "user:root", "user:0", "group:rpcd", "client:ops.example", "client:*", "10.0.0.0/8",
                     "192.168.1.7", "::1", "fd00::/8", "0.0.0.0/0"] {
            XCTAssertEqual(try RPCPrincipal(parsing: text).description, text)
        }
    }

    func testMalformedPrincipalsSayWhy() {
        let cases = [("user:", "no user name after user:"), ("group:", "no group name after group:"),
                     ("client:", "no certificate name after client:"), ("10.0.0.1/8", "not one of the forms"),
                     ("10.0.0.0/33", "not one of the forms"), ("everyone", "not one of the forms"), ("10.0.0.0/", "not one of the forms")]
        for (text, problem) in cases {
            XCTAssertThrowsError(try RPCPrincipal(parsing: text), text) { error in
                XCTAssertEqual((error as? RPCPrincipalError)?.problem, problem, text)
            }
        }
    }

    func testNetworksContainTheirAddressesOnly() throws {
        let lan = try XCTUnwrap(RPCNetwork(parsing: "192.168.1.0/24"))
        XCTAssertTrue(lan.contains("192.168.1.200"))
        XCTAssertTrue(lan.contains("::ffff:192.168.1.9"), "IPv4-mapped peers of a dual-stack listener")
        XCTAssertFalse(lan.contains("192.168.2.1"))
        XCTAssertFalse(lan.contains("fe80::1"))
        XCTAssertFalse(lan.contains("not an address"))
        let ula = try XCTUnwrap(RPCNetwork(parsing: "fd00::/8"))
        XCTAssertTrue(ula.contains("fd12:3456::1"))
        XCTAssertFalse(ula.contains("fe80::1"))
        XCTAssertTrue(try XCTUnwrap(RPCNetwork(parsing: "0.0.0.0/0")).contains("8.8.8.8"))
        XCTAssertTrue(try XCTUnwrap(RPCNetwork(parsing: "127.0.0.0/8")).isLoopback)
        XCTAssertTrue(try XCTUnwrap(RPCNetwork(parsing: "::1")).isLoopback)
        XCTAssertFalse(try XCTUnwrap(RPCNetwork(parsing: "0.0.0.0/0")).isLoopback)
    }
}
