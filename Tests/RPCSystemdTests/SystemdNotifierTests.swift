import Foundation
import RPCSystemd
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `SystemdNotifier` through the real libsystemd, to a datagram socket standing in for systemd's.
final class SystemdNotifierTests: XCTestCase {
    func testFieldsAreSdNotifyLines() {
        XCTAssertEqual(NotifyField.ready.line, "READY=1")
        XCTAssertEqual(NotifyField.reloading.line, "RELOADING=1")
        XCTAssertEqual(NotifyField.stopping.line, "STOPPING=1")
        XCTAssertEqual(NotifyField.watchdog.line, "WATCHDOG=1")
        XCTAssertEqual(NotifyField.errno(22).line, "ERRNO=22")
        XCTAssertEqual(NotifyField.extendTimeout(microseconds: 10_000_000).line, "EXTEND_TIMEOUT_USEC=10000000")
        XCTAssertEqual(NotifyField.status("two\nlines").line, "STATUS=two lines")
        guard case .monotonicTime(let microseconds) = NotifyField.monotonicNow() else { return XCTFail() }
        XCTAssertGreaterThan(microseconds, 0)
    }

    func testSendsOneDatagramToNotifySocket() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-notify-\(getpid()).sock").path
        unlink(path)
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(receiver, 0)
        defer { close(receiver); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            path.utf8CString.withUnsafeBytes { bytes.copyMemory(from: $0) }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)

        let result = withEnvironment(["NOTIFY_SOCKET": path]) {
            XCTAssertTrue(SystemdNotifier.isSupervised)
            return SystemdNotifier().send(.ready, .status("Serving"))
        }
        XCTAssertEqual(result, .sent)
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(receiver, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        XCTAssertGreaterThan(count, 0)
        XCTAssertEqual(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self), "READY=1\nSTATUS=Serving")
    }

    func testWithoutNotifySocketIsNotSupervised() {
        withEnvironment(["NOTIFY_SOCKET": nil]) {
            XCTAssertFalse(SystemdNotifier.isSupervised)
            XCTAssertEqual(SystemdNotifier().send(.ready), .notSupervised)
        }
        XCTAssertEqual(NoNotifier().send(.ready), .notSupervised)
    }

    func testUnreachableSocketIsAnErrorWithErrno() {
        let result = withEnvironment(["NOTIFY_SOCKET": "/nonexistent/rpcd-notify.sock"]) { SystemdNotifier().send(.ready) }
        guard case .failed(let error) = result else { return XCTFail("expected a failure, got \(result)") }
        XCTAssertEqual(error.errno, ENOENT)
        XCTAssertTrue(error.description.hasPrefix("sd_notify: "), error.description)
    }

    func testWatchdogIntervalComesFromTheEnvironment() throws {
        try withEnvironment(["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "\(getpid())"]) {
            XCTAssertEqual(try WatchdogService.configuredInterval(), .seconds(3))
        }
        try withEnvironment(["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "1"]) {
            XCTAssertNil(try WatchdogService.configuredInterval(), "another process's watchdog")
        }
        try withEnvironment(["WATCHDOG_USEC": nil, "WATCHDOG_PID": nil]) {
            XCTAssertNil(try WatchdogService.configuredInterval())
        }
        XCTAssertThrowsError(
            try withEnvironment(["WATCHDOG_USEC": "soon", "WATCHDOG_PID": nil]) { try WatchdogService.configuredInterval() })
    }
}
