import RPCDNSSD
import RPCProtocol
import XCTest

@testable import RPCDiscovery

/// What a client following discovery connects to, from a fed list of events (no Avahi involved).
final class RPCEndpointListTests: XCTestCase {
    private func instance(_ name: String, port: Int, fingerprint: String = "0123456789abcdef") -> RPCDiscoveredInstance {
        RPCDiscoveredInstance(
            name: name, domain: "local",
            advertisement: RPCAdvertisement(service: "calc", version: "1.0.0", fingerprint: fingerprint, protocolVersion: 1),
            hostName: "\(name).local", address: "10.0.0.\(port % 250)", port: port, interfaceIndex: 2, isIPv6: false)
    }

    func testInstancesKeepTheirPlaceAsOthersComeAndGo() {
        var list = RPCEndpointList()
        let a = instance("a", port: 7001), b = instance("b", port: 7002), c = instance("c", port: 7003)
        XCTAssertEqual(list.apply(.appeared(a)), [.tcp(host: "10.0.0.1", port: 7001)])
        XCTAssertEqual(list.apply(.appeared(b))?.count, 2)
        XCTAssertNil(list.apply(.settled))
        XCTAssertEqual(list.apply(.appeared(c))?.map(\.description), ["10.0.0.1:7001", "10.0.0.2:7002", "10.0.0.3:7003"])
        XCTAssertEqual(list.apply(.disappeared(b))?.map(\.description), ["10.0.0.1:7001", "10.0.0.3:7003"])
        // A moved instance stays first: the client's slot that used it reconnects to its new address.
        XCTAssertEqual(list.apply(.updated(instance("a", port: 7011)))?.map(\.description), ["10.0.0.11:7011", "10.0.0.3:7003"])
        XCTAssertNil(list.apply(.updated(instance("a", port: 7011))), "the same record again changes nothing")
        XCTAssertEqual(list.apply(.disappeared(c))?.map(\.description), ["10.0.0.11:7011"])
        XCTAssertEqual(list.apply(.disappeared(instance("a", port: 7011))), [])
    }

    func testAnotherFingerprintIsLeftOut() {
        var list = RPCEndpointList(fingerprint: "0123456789abcdef")
        XCTAssertNil(list.apply(.appeared(instance("old", port: 7001, fingerprint: "ffffffffffffffff"))))
        XCTAssertEqual(list.apply(.appeared(instance("new", port: 7002)))?.count, 1)
        // An instance upgraded to another interface leaves the list.
        XCTAssertEqual(list.apply(.updated(instance("new", port: 7002, fingerprint: "ffffffffffffffff"))), [])
    }
}
