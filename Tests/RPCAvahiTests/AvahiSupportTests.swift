import CAvahi
import XCTest

@testable import RPCAvahi

final class AvahiSupportTests: XCTestCase {
    func testErrorsCarryAvahisMessage() {
        let error = AvahiError("connecting to avahi-daemon", code: Int32(AVAHI_ERR_NO_DAEMON))
        XCTAssertEqual(error.description, "connecting to avahi-daemon: Daemon not running")
        XCTAssertTrue(error.isDaemonMissing)
        XCTAssertFalse(AvahiError("x", code: Int32(AVAHI_ERR_COLLISION)).isDaemonMissing)
    }

    func testTXTStringsKeepTheirOrderThroughAvahisList() {
        let strings = [Array("txtvers=1".utf8), Array("proto=1".utf8), [0x62, 0x00, 0xFF], []]
        let list = AvahiTXT.make(strings)
        defer { avahi_string_list_free(list) }
        XCTAssertEqual(AvahiTXT.strings(list), strings)
        XCTAssertEqual(AvahiTXT.strings(nil), [])
    }

    func testThreadedPollStartsAndStops() throws {
        let poll = try AvahiThreadedPoll()
        try poll.start()
        XCTAssertEqual(poll.withLock { 42 }, 42)
        poll.stop()
        poll.stop()
    }
}
