import RPCConfig
import RPCProtocol
import XCTest

final class EndpointValueTests: XCTestCase {
    func testAddressForms() throws {
        XCTAssertEqual(try entry("127.0.0.1:7390").endpointValue(), .tcp(host: "127.0.0.1", port: 7390))
        XCTAssertEqual(try entry("[::1]:9000").endpointValue(), .tcp(host: "::1", port: 9000))
        XCTAssertEqual(try entry("localhost:1").endpointValue(), .tcp(host: "localhost", port: 1))
        XCTAssertEqual(try entry("/run/rpcd/rpcd.sock").endpointValue(), .unix(path: "/run/rpcd/rpcd.sock"))
    }

    func testInvalidAddressesNameKeyAndProblem() {
        XCTAssertEqual(
            configError { try entry("localhost", key: "Listen").endpointValue() }?.description,
            "/test.conf:3: invalid value 'localhost' for Listen=: expected HOST:PORT, [IPV6]:PORT or an absolute socket path (tls://, http:// or https:// before either TCP form, or http+unix:/PATH), as in 127.0.0.1:7390")
        XCTAssertEqual(
            configError { try entry("127.0.0.1:70000", key: "Listen").endpointValue() }?.message,
            "invalid value '127.0.0.1:70000' for Listen=: the port must be a number from 0 to 65535")
        XCTAssertNotNil(configError { try entry("::1:80").endpointValue() })
    }
}
