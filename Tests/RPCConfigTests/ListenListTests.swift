import RPCConfig
import RPCProtocol
import XCTest

/// `Listen=` follows systemd's list semantics.
final class ListenListTests: XCTestCase {
    private let socket = RPCEndpoint.unix(path: "/run/rpcd/rpcd.sock")
    private let loopback = RPCEndpoint.tcp(host: "127.0.0.1", port: 7390)

    func testFirstAssignmentReplacesTheDefaults() throws {
        XCTAssertEqual(try configuration("[Server]\nListen=[::1]:9000\n").listen, [.tcp(host: "::1", port: 9000)])
    }

    func testFurtherAssignmentsAppendInOrder() throws {
        let config = try configuration("[Server]\nListen=/tmp/a.sock\nListen=0.0.0.0:1\nListen=[::]:2\n")
        XCTAssertEqual(config.listen, [.unix(path: "/tmp/a.sock"), .tcp(host: "0.0.0.0", port: 1), .tcp(host: "::", port: 2)])
    }

    func testEmptyAssignmentClearsTheListSoFar() throws {
        let config = try configuration("[Server]\nListen=/tmp/a.sock\nListen=\nListen=127.0.0.1:1\n")
        XCTAssertEqual(config.listen, [.tcp(host: "127.0.0.1", port: 1)])
    }

    func testEmptyAssignmentAloneLeavesNoListeners() throws {
        XCTAssertEqual(try configuration("[Server]\nListen=\n").listen, [])
    }

    func testRepeatedAddressIsListedOnce() throws {
        XCTAssertEqual(try configuration("[Server]\nListen=127.0.0.1:7390\nListen=127.0.0.1:7390\n").listen, [loopback])
    }

    func testDropInAppendsToTheMainFilesList() throws {
        let main = try INIDocument.parse("[Server]\nListen=/run/rpcd/rpcd.sock\n", file: "/etc/rpcd/rpcd.conf")
        let dropIn = try INIDocument.parse("[Server]\nListen=127.0.0.1:7390\n", file: "/etc/rpcd/rpcd.conf.d/10-tcp.conf")
        XCTAssertEqual(try ServerConfiguration(documents: [main, dropIn]).listen, [socket, loopback])
    }

    func testDropInCanClearAndReplaceTheList() throws {
        let main = try INIDocument.parse("[Server]\nListen=/run/rpcd/rpcd.sock\nListen=127.0.0.1:7390\n", file: "/etc/rpcd/rpcd.conf")
        let dropIn = try INIDocument.parse("[Server]\nListen=\nListen=0.0.0.0:7390\n", file: "/etc/rpcd/rpcd.conf.d/50-public.conf")
        XCTAssertEqual(try ServerConfiguration(documents: [main, dropIn]).listen, [.tcp(host: "0.0.0.0", port: 7390)])
    }

    func testDropInWithoutListenKeepsTheDefaults() throws {
        let dropIn = try INIDocument.parse("[Server]\nThreads=2\n", file: "/etc/rpcd/rpcd.conf.d/x.conf")
        XCTAssertEqual(try ServerConfiguration(documents: [dropIn]).listen, [socket, loopback])
    }

    func testInvalidAddressNamesFileAndLine() {
        XCTAssertEqual(
            configError { try configuration("[Server]\nListen=/ok.sock\nListen=127.0.0.1\n") }?.description,
            "/etc/rpcd/rpcd.conf:3: invalid value '127.0.0.1' for Listen=: expected HOST:PORT, [IPV6]:PORT or an absolute socket path (tls://, http:// or https:// before either TCP form, or http+unix:/PATH), as in 127.0.0.1:7390")
    }
}
