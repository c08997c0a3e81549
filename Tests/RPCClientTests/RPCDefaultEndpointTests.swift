import RPCClient
import RPCProtocol
import RPCWire
import XCTest

final class RPCDefaultEndpointTests: XCTestCase {
    func testExplicitAddressWins() throws {
        XCTAssertEqual(
            try RPCDefaultEndpoint.resolve(
                address: "[::1]:9", environment: ["RPCD_ADDRESS": "127.0.0.1:1"], socketExists: { _ in true }),
            .tcp(host: "::1", port: 9))
    }

    func testEnvironmentBeforeDefaultSocket() throws {
        XCTAssertEqual(
            try RPCDefaultEndpoint.resolve(
                address: nil, environment: ["RPCD_ADDRESS": "/tmp/x.sock"], socketExists: { _ in true }),
            .unix(path: "/tmp/x.sock"))
    }

    func testDefaultSocketWhenItExistsElseLoopbackTCP() throws {
        XCTAssertEqual(
            try RPCDefaultEndpoint.resolve(address: nil, environment: ["RPCD_ADDRESS": ""], socketExists: {
                $0 == RPCEndpoint.defaultSocketPath
            }),
            .unix(path: RPCEndpoint.defaultSocketPath))
        XCTAssertEqual(
            try RPCDefaultEndpoint.resolve(address: nil, environment: [:], socketExists: { _ in false }),
            .tcp(host: "127.0.0.1", port: RPCEndpoint.defaultPort))
    }

    func testInvalidAddressNamesItsSource() {
        XCTAssertThrowsError(try RPCDefaultEndpoint.resolve(address: "nonsense", environment: [:])) { error in
            XCTAssertTrue("\(error)".hasPrefix("--address: "), "\(error)")
        }
        XCTAssertThrowsError(
            try RPCDefaultEndpoint.resolve(address: nil, environment: ["RPCD_ADDRESS": "::1:80"])
        ) { error in
            XCTAssertTrue("\(error)".hasPrefix("RPCD_ADDRESS: "), "\(error)")
        }
    }

    func testIsSocketIsFalseForRegularFilesAndMissingPaths() {
        XCTAssertFalse(RPCDefaultEndpoint.isSocket("/nonexistent/rpcd.sock"))
        XCTAssertFalse(RPCDefaultEndpoint.isSocket("/etc/hostname"))
    }
}

#if canImport(Glibc)
import Glibc

final class RPCDefaultEndpointSocketTests: XCTestCase {
    func testIsSocketIsTrueForABoundUnixSocket() throws {
        let path = "/tmp/rpcclient-tests-\(getpid()).sock"
        unlink(path)
        defer { unlink(path) }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertTrue(RPCDefaultEndpoint.isSocket(path))
    }
}
#endif
