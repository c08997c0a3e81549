import RPCDNSSD
import XCTest

final class RPCAdvertisementTests: XCTestCase {
    let calc = RPCAdvertisement(service: "calc", version: "1.0.0", fingerprint: "9f2c4e01aa3b7d55", protocolVersion: 1)

    func testRecordLayout() throws {
        XCTAssertEqual(RPCAdvertisement.serviceType, "_rpcd._tcp")
        XCTAssertEqual(try calc.subtype(), "_calc._sub._rpcd._tcp")
        let txt = try calc.txtRecord()
        XCTAssertEqual(
            txt.strings.map { String(decoding: $0, as: UTF8.self) },
            ["txtvers=1", "proto=1", "service=calc", "version=1.0.0", "fp=9f2c4e01aa3b7d55"])
        XCTAssertLessThanOrEqual(txt.wireSize, DNSSDTXTRecord.recommendedMaxBytes)
        var tls = calc
        tls.tls = true
        XCTAssertEqual(try tls.txtRecord()["tls"], "1")
    }

    func testRoundTripThroughTheWire() throws {
        let parsed = RPCAdvertisement(txt: DNSSDTXTRecord(parsing: try calc.txtRecord().strings))
        XCTAssertEqual(parsed, calc)
    }

    func testTheOtherTransportsAreNamedWithTheirPorts() throws {
        var both = calc
        both.httpPort = 7380
        both.httpsPort = 7381
        let txt = try both.txtRecord()
        XCTAssertEqual([txt["http"], txt["https"]], ["7380", "7381"])
        XCTAssertEqual(RPCAdvertisement(txt: DNSSDTXTRecord(parsing: txt.strings)), both)
        XCTAssertNil(try calc.txtRecord()["http"])
    }

    func testWebPageIsAnHTTPServiceWithItsPath() throws {
        let page = RPCWebPageAdvertisement(path: "/", port: 7380, tls: false)
        XCTAssertEqual(page.serviceType, "_http._tcp")
        XCTAssertEqual(try page.txtRecord().strings.map { String(decoding: $0, as: UTF8.self) }, ["path=/"])
        XCTAssertEqual(RPCWebPageAdvertisement(path: "/", port: 7381, tls: true).serviceType, "_https._tcp")
    }

    func testLongVersionsAreCutSoTheRecordStaysSmall() throws {
        var long = calc
        long.version = String(repeating: "1.", count: 200)
        let txt = try long.txtRecord()
        XCTAssertEqual(txt["version"]?.utf8.count, RPCAdvertisement.maxVersionBytes)
    }

    func testForeignRecordsAreNotRead() {
        XCTAssertNil(RPCAdvertisement(txt: DNSSDTXTRecord(parsing: [Array("txtvers=1".utf8), Array("service=calc".utf8)])), "no fp")
        XCTAssertNil(RPCAdvertisement(txt: DNSSDTXTRecord(parsing: [Array("txtvers=2".utf8), Array("service=calc".utf8), Array("fp=1".utf8)])))
        XCTAssertNil(RPCAdvertisement(txt: DNSSDTXTRecord(parsing: [])))
        let minimal = RPCAdvertisement(txt: DNSSDTXTRecord(parsing: [Array("txtvers=1".utf8), Array("service=kv".utf8), Array("fp=ab".utf8)]))
        XCTAssertEqual(minimal, RPCAdvertisement(service: "kv", version: "", fingerprint: "ab", protocolVersion: 1))
    }
}
