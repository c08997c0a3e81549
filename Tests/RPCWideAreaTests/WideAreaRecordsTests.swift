import RPCDNSSD
import RPCWideArea
import XCTest

final class WideAreaRecordsTests: XCTestCase {
    /// The records of docs/DISCOVERY.md's example, as a zone file writes them (and `dig` prints them).
    func testTheRecordsAreTheLinkOnesUnderTheDomain() throws {
        let records = WideAreaRecords(domain: "services.example.net", ttl: 120)
        let advertisement = RPCAdvertisement(service: "calc", version: "1.0.0", fingerprint: "7076505adff1ca0f", protocolVersion: 1)
        let set = try XCTUnwrap(records.service(instance: "calc on h1", advertisement: advertisement, host: "h1", port: 7390))
        XCTAssertEqual(set.map(\.description), [
            #"_rpcd._tcp.services.example.net. 120 IN PTR calc\032on\032h1._rpcd._tcp.services.example.net."#,
            #"_calc._sub._rpcd._tcp.services.example.net. 120 IN PTR calc\032on\032h1._rpcd._tcp.services.example.net."#,
            #"calc\032on\032h1._rpcd._tcp.services.example.net. 120 IN SRV 0 0 7390 h1.services.example.net."#,
            #"calc\032on\032h1._rpcd._tcp.services.example.net. 120 IN TXT "txtvers=1" "proto=1" "service=calc" "version=1.0.0" "fp=7076505adff1ca0f""#,
        ])
        XCTAssertEqual(records.addresses(host: "h1", ["192.0.2.10", "2001:db8::10"]).map(\.description), [
            "h1.services.example.net. 120 IN A 192.0.2.10", "h1.services.example.net. 120 IN AAAA 2001:db8::10",
        ])
    }

    func testEscapingKeepsOneLabel() {
        XCTAssertEqual(DNSPresentation.label("a.b \"c\"\\"), #"a\046b\032\034c\034\092"#)
        XCTAssertEqual(DNSPresentation.labels(of: #"a\046b\032c._rpcd._tcp.x.test."#), ["a.b c", "_rpcd", "_tcp", "x", "test"])
        XCTAssertEqual(DNSPresentation.labels(of: DNSPresentation.label("calc on höst #2") + ".x."), ["calc on höst #2", "x"])
        XCTAssertEqual(DNSPresentation.characterString(Array("a\"b".utf8)), #""a\034b""#)
    }

    func testServerAddresses() {
        XCTAssertEqual(DNSServerAddress(parsing: "192.0.2.53")?.description, "192.0.2.53:53")
        XCTAssertEqual(DNSServerAddress(parsing: "192.0.2.53:5300")?.port, 5300)
        XCTAssertEqual(DNSServerAddress(parsing: "2001:db8::1")?.description, "[2001:db8::1]:53")
        XCTAssertEqual(DNSServerAddress(parsing: "[2001:db8::1]:5300")?.port, 5300)
        XCTAssertNil(DNSServerAddress(parsing: "ns1.example.net"))
        XCTAssertNil(DNSServerAddress(parsing: "192.0.2.53:0"))
        XCTAssertNil(DNSServerAddress(parsing: "300.0.2.53"))
    }

    func testResponseCodesAreNamedAsDigNamesThem() {
        XCTAssertEqual("\(DNSResponseCode.notAuth)", "NOTAUTH")
        XCTAssertEqual("\(DNSResponseCode(16))", "BADSIG")
        XCTAssertEqual("\(DNSResponseCode(42))", "RCODE42")
    }
}
