import RPCSystemd
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `SocketActivation` with descriptors placed where systemd puts them (3 and up). The test's own fd 3 is
/// saved and restored.
final class SocketActivationTests: XCTestCase {
    private func withDescriptor3(_ descriptor: Int32, names: String, _ body: () throws -> Void) rethrows {
        let saved = dup(3)
        XCTAssertEqual(dup2(descriptor, 3), 3)
        defer {
            if saved >= 0 {
                dup2(saved, 3)
                close(saved)
            } else {
                close(3)
            }
        }
        try withEnvironment(["LISTEN_FDS": "1", "LISTEN_PID": "\(getpid())", "LISTEN_FDNAMES": names]) {
            try body()
            XCTAssertNil(getenv("LISTEN_FDS"), "the variables are unset once the sockets are taken")
        }
    }

    private func tcpSocket(listening: Bool) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if listening { listen(descriptor, 8) }
        return descriptor
    }

    func testNoSocketsWithoutListenFds() throws {
        try withEnvironment(["LISTEN_FDS": nil, "LISTEN_PID": nil]) {
            XCTAssertEqual(try SocketActivation.takeListeningSockets(), [])
        }
    }

    func testTakesAListeningSocketWithItsName() throws {
        let listener = tcpSocket(listening: true)
        defer { close(listener) }
        try withDescriptor3(listener, names: "rpcd") {
            XCTAssertEqual(try SocketActivation.takeListeningSockets(), [ActivatedSocket(descriptor: 3, name: "rpcd")])
        }
    }

    func testRefusesASocketThatDoesNotListen() throws {
        let unbound = tcpSocket(listening: false)
        defer { close(unbound) }
        try withDescriptor3(unbound, names: "odd") {
            XCTAssertThrowsError(try SocketActivation.takeListeningSockets()) { error in
                XCTAssertEqual(
                    "\(error)",
                    "file descriptor 3 ('odd') passed by systemd cannot be served: it is not a listening stream socket; rpcd.socket must use ListenStream=")
            }
        }
    }
}

/// The names rpcd stores its listening sockets under (`ListenerStore`): what `$LISTEN_FDNAMES` can carry.
final class ListenerStoreTests: XCTestCase {
    func testNamesCarryTheAddressWithoutWhatFDNAMECannotHold() {
        XCTAssertEqual(ListenerStore.name(forAddress: "127.0.0.1:7390"), "listen-127.0.0.1%3A7390")
        XCTAssertEqual(ListenerStore.name(forAddress: "[::1]:7390"), "listen-[%3A%3A1]%3A7390")
        XCTAssertEqual(ListenerStore.name(forAddress: "/run/rpcd/rpcd.sock"), "listen-/run/rpcd/rpcd.sock")
        XCTAssertEqual(ListenerStore.name(forAddress: "/tmp/a b%é"), "listen-/tmp/a%20b%25%C3%A9")
        XCTAssertEqual(ListenerStore.name(forAddress: "/" + String(repeating: "x", count: 300)).utf8.count, 255)
    }

    func testStoredSocketsAreToldFromASocketUnitsByName() {
        XCTAssertTrue(ListenerStore.isStored(ActivatedSocket(descriptor: 3, name: "listen-127.0.0.1%3A7390")))
        XCTAssertFalse(ListenerStore.isStored(ActivatedSocket(descriptor: 3, name: "rpcd")))
    }

    func testOutsideSystemdNothingIsSent() {
        withEnvironment(["NOTIFY_SOCKET": nil]) {
            XCTAssertEqual(ListenerStore.keep(0, name: "listen-x"), .notSupervised)
            XCTAssertEqual(ListenerStore.remove(name: "listen-x"), .notSupervised)
        }
    }
}
