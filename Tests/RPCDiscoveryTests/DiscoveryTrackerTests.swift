import RPCDNSSD
import XCTest

@testable import RPCDiscovery

final class DiscoveryTrackerTests: XCTestCase {
    private func instance(_ name: String, version: String = "1.0.0", address: String = "10.0.0.1") -> RPCDiscoveredInstance {
        RPCDiscoveredInstance(
            name: name, domain: "local",
            advertisement: RPCAdvertisement(service: "calc", version: version, fingerprint: "0123456789abcdef", protocolVersion: 1),
            hostName: "a.local", address: address, port: 7390, interfaceIndex: 2, isIPv6: false)
    }

    func testSettlesOnlyAfterAllForNowAndEveryResolve() {
        var tracker = DiscoveryTracker<String>()
        XCTAssertEqual(tracker.found("a"), [])
        XCTAssertEqual(tracker.found("b"), [])
        XCTAssertEqual(tracker.allForNowReached(), [], "two resolves are outstanding")
        XCTAssertEqual(tracker.resolved("a", instance("a")), [.appeared(instance("a"))])
        XCTAssertEqual(tracker.resolveFailed("b"), [.settled])
        XCTAssertEqual(tracker.found("c"), [])
        XCTAssertEqual(tracker.resolved("c", instance("c")), [.appeared(instance("c"))], "settled is sent once")
    }

    func testUpdatesAndRemovals() {
        var tracker = DiscoveryTracker<String>()
        XCTAssertEqual(tracker.allForNowReached(), [.settled])
        _ = tracker.found("a")
        XCTAssertEqual(tracker.resolved("a", instance("a")), [.appeared(instance("a"))])
        XCTAssertEqual(tracker.resolved("a", instance("a")), [], "the same record again is no news")
        XCTAssertEqual(tracker.resolved("a", instance("a", version: "1.1.0")), [.updated(instance("a", version: "1.1.0"))])
        XCTAssertEqual(tracker.removed("a"), [.disappeared(instance("a", version: "1.1.0"))])
        XCTAssertEqual(tracker.removed("a"), [], "unknown instances do not disappear twice")
    }

    func testRecordsThatAreNotRPCDsAreSkipped() {
        var tracker = DiscoveryTracker<String>()
        _ = tracker.found("x")
        XCTAssertEqual(tracker.resolved("x", nil), [])
        XCTAssertEqual(tracker.allForNowReached(), [.settled])
        XCTAssertEqual(tracker.removed("x"), [])
    }

    func testBrowseTypes() throws {
        XCTAssertEqual(try RPCServiceDiscovery().browseType(), "_rpcd._tcp")
        XCTAssertEqual(try RPCServiceDiscovery(service: "calc").browseType(), "_calc._sub._rpcd._tcp")
        XCTAssertThrowsError(try RPCServiceDiscovery(service: "no_such").browseType())
    }
}
