import Foundation
import RPCDNSSD
import RPCWideArea
import XCTest

final class WideAreaLeaseTests: XCTestCase {
    let records = WideAreaRecords(domain: "rpcd.test", ttl: 10)

    func testTheLeaseRecordAsDigShowsIt() {
        let lease = WideAreaLease(duration: 120, from: 1_764_141_114, owner: "5f0c2a9e41b7d3c8")
        XCTAssertEqual(lease.expires, 1_764_141_234)
        XCTAssertEqual(
            records.lease(host: "h1", lease).description, #"h1.rpcd.test. 10 IN TXT "lease=120" "expires=1764141234" "owner=5f0c2a9e41b7d3c8""#)
        XCTAssertEqual(WideAreaLease(txt: lease.txt), lease)
    }

    func testOnlyRpcdsOwnStringsAreALease() {
        XCTAssertNil(WideAreaLease(txt: []))
        XCTAssertNil(WideAreaLease(txt: [Array("v=spf1 -all".utf8)]))
        let owner = Array("owner=ab".utf8)
        XCTAssertNil(WideAreaLease(txt: [Array("expires=10".utf8), Array("lease=5".utf8), owner]))
        XCTAssertNil(WideAreaLease(txt: [Array("lease=+5".utf8), Array("expires=10".utf8), owner]))
        XCTAssertNil(WideAreaLease(txt: [Array("lease=5".utf8), Array("expires=-1".utf8), owner]))
        XCTAssertNil(WideAreaLease(txt: [Array("lease=5".utf8), Array("expires=10".utf8)]))
        XCTAssertNil(WideAreaLease(txt: [Array("lease=5".utf8), Array("expires=10".utf8), Array("owner=".utf8)]))
        XCTAssertNil(WideAreaLease(txt: [Array("lease=5".utf8), Array("expires=10".utf8), owner, Array("x".utf8)]))
        XCTAssertEqual(
            WideAreaLease(txt: [Array("lease=5".utf8), Array("expires=10".utf8), owner]), WideAreaLease(duration: 5, expires: 10, owner: "ab"))
    }

    func testExpiredFromItsEndOn() {
        let lease = WideAreaLease(duration: 6, expires: 100, owner: "ab")
        XCTAssertFalse(lease.isExpired(at: 99))
        XCTAssertTrue(lease.isExpired(at: 100))
    }

    func instance(_ name: String, host: String, service: String, lease: WideAreaLease?) -> WideAreaBrowser.Instance {
        let advertisement = RPCAdvertisement(service: service, version: "1.0.0", fingerprint: "7076505adff1ca0f", protocolVersion: 1)
        return WideAreaBrowser.Instance(
            name: name, owner: records.instanceName(name), domain: "rpcd.test", txt: try! advertisement.txtRecord().strings,
            target: records.hostName(host), port: 7390, addresses: [], lease: lease)
    }

    /// Only other hosts' passed leases, inside the zone; a host without a lease is never rpcd's to remove.
    func testTheSweepTakesOnlyOtherHostsWhoseLeasePassed() {
        let passed = WideAreaLease(duration: 6, expires: 100, owner: "ab")
        let live = WideAreaLease(duration: 6, expires: 103, owner: "cd")
        var foreign = instance("web on www", host: "www", service: "web", lease: passed)
        foreign.target = "www.example.net."
        let found = [
            instance("calc on h1", host: "h1", service: "calc", lease: passed),
            instance("echo on h1", host: "h1", service: "echo", lease: passed),
            instance("calc on h2", host: "h2", service: "calc", lease: live),
            instance("calc on h3", host: "h3", service: "calc", lease: passed),
            instance("calc on static", host: "static", service: "calc", lease: nil),
            foreign,
        ]
        let expired = WideAreaSweep.expired(found, at: 101, own: "h3.rpcd.test.", records: records)
        XCTAssertEqual(expired.map(\.target), ["h1.rpcd.test."])
        XCTAssertEqual(expired.first?.instances.map(\.name), ["calc on h1", "echo on h1"])
        XCTAssertEqual(WideAreaSweep.expired(found, at: 99, own: "h3.rpcd.test.", records: records), [])
    }

    /// One update per host, guarded by the lease record exactly as read.
    func testTheRemovalIsGuardedByTheLeaseAsRead() throws {
        let passed = WideAreaLease(duration: 6, expires: 100, owner: "ab")
        let expired = try XCTUnwrap(WideAreaSweep.expired(
            [instance("calc on h1", host: "h1", service: "calc", lease: passed)], at: 100, own: "h2.rpcd.test.", records: records).first)
        let (prerequisites, changes) = WideAreaSweep.removal(expired, records: records)
        XCTAssertEqual(prerequisites, [.recordExists(DNSRecord(owner: "h1.rpcd.test.", ttl: 0, type: "TXT", data: #""lease=6" "expires=100" "owner=ab""#))])
        let owner = #"calc\032on\032h1._rpcd._tcp.rpcd.test."#
        XCTAssertEqual(changes, [
            .delete(DNSRecord(owner: "_rpcd._tcp.rpcd.test.", ttl: 0, type: "PTR", data: owner)),
            .delete(DNSRecord(owner: "_calc._sub._rpcd._tcp.rpcd.test.", ttl: 0, type: "PTR", data: owner)),
            .deleteRRSet(name: owner, type: "SRV"), .deleteRRSet(name: owner, type: "TXT"),
            .deleteRRSet(name: "h1.rpcd.test.", type: "A"), .deleteRRSet(name: "h1.rpcd.test.", type: "AAAA"),
            .deleteRRSet(name: "h1.rpcd.test.", type: "TXT"),
        ])
    }

    /// RFC 9664: the update carries EDNS option 2 with the lease, inside what TSIG signs.
    func testUpdatesAskForAnUpdateLease() throws {
        let client = DNSUpdateClient(server: DNSServerAddress(address: "192.0.2.53"), key: try TSIGKey(parsing: TSIGKeyTests.keygenOutput))
        let record = records.lease(host: "h1", WideAreaLease(duration: 6, expires: 100, owner: "ab"))
        let leased = try client.wire(zone: "rpcd.test", prerequisites: [], changes: [.add(record)], lease: 7200)
        let option: [UInt8] = [0, 2, 0, 4, 0, 0, 0x1C, 0x20]
        XCTAssertTrue(contains(leased, option), "no Update Lease option in \(leased)")
        XCTAssertTrue(contains(leased, [0, 0x29, 0x04, 0xD0]), "no OPT record (type 41, 1232 bytes)")
        XCTAssertTrue(contains(leased, Array("hmac-sha256".utf8)), "the update is signed")
        let plain = try client.wire(zone: "rpcd.test", prerequisites: [], changes: [.add(record)])
        XCTAssertFalse(contains(plain, [0, 0x29, 0x04, 0xD0]))
    }

    func testTheGrantedLeaseIsReadFromTheOptions() {
        XCTAssertEqual(DNSUpdateClient.updateLease(in: [0, 10, 0, 2, 1, 2, 0, 2, 0, 8, 0, 0, 0x0E, 0x10, 0, 0, 0, 0]), 3600)
        XCTAssertNil(DNSUpdateClient.updateLease(in: [0, 10, 0, 2, 1, 2]))
        XCTAssertNil(DNSUpdateClient.updateLease(in: [0, 2, 0, 9, 0]))
    }

    /// Stable per machine and zone, different across machines and zones, and not the machine id itself.
    func testTheHostIDIsDerivedFromTheMachineID() throws {
        let id = WideAreaHostID.derive(machineID: "0123456789abcdef0123456789abcdef", domain: "rpcd.test")
        XCTAssertEqual(id.count, 16)
        XCTAssertTrue(id.allSatisfy(\.isHexDigit))
        XCTAssertEqual(WideAreaHostID.derive(machineID: "0123456789abcdef0123456789abcdef", domain: "RPCD.test."), id)
        XCTAssertNotEqual(WideAreaHostID.derive(machineID: "fedcba9876543210fedcba9876543210", domain: "rpcd.test"), id)
        XCTAssertNotEqual(WideAreaHostID.derive(machineID: "0123456789abcdef0123456789abcdef", domain: "other.test"), id)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("machine-id-\(getpid())")
        try "0123456789abcdef0123456789abcdef\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        XCTAssertEqual(WideAreaHostID.current(domain: "rpcd.test", machineIDPath: file.path), id)
        XCTAssertNotEqual(
            WideAreaHostID.current(domain: "rpcd.test", machineIDPath: "/nonexistent"),
            WideAreaHostID.current(domain: "rpcd.test", machineIDPath: "/nonexistent"), "random without a machine id")
    }

    private func contains(_ bytes: [UInt8], _ part: [UInt8]) -> Bool {
        guard bytes.count >= part.count else { return false }
        return (0...(bytes.count - part.count)).contains { Array(bytes[$0..<($0 + part.count)]) == part }
    }
}
