import RPCConfig
import RPCDNSSD
import XCTest

final class WideAreaSectionTests: XCTestCase {
    func testOffByDefault() {
        let wideArea = ServerConfiguration.defaults.wideArea
        XCTAssertFalse(wideArea.enabled)
        XCTAssertEqual(wideArea.ttl, 120)
        XCTAssertEqual(wideArea.lease, 120)
        XCTAssertEqual(wideArea.advertiseAddresses, [])
    }

    func testEveryKeyParses() throws {
        let wideArea = try configuration("""
            [WideArea]
            Domain=services.example.net.
            Server=[2001:db8::53]:5353
            KeyFile=/etc/rpcd/update.key
            TTL=30
            Lease=3600
            AdvertiseAddress=192.0.2.10
            AdvertiseAddress=2001:db8::10

            """).wideArea
        XCTAssertEqual(wideArea.domain, "services.example.net")
        XCTAssertEqual(wideArea.server, DNSServerAddress(address: "2001:db8::53", port: 5353))
        XCTAssertEqual(wideArea.keyFile, "/etc/rpcd/update.key")
        XCTAssertEqual(wideArea.ttl, 30)
        XCTAssertEqual(wideArea.lease, 3600)
        XCTAssertEqual(wideArea.advertiseAddresses, ["192.0.2.10", "2001:db8::10"])
        XCTAssertEqual(try configuration("[WideArea]\nDomain=x.test\nServer=192.0.2.53\nKeyFile=/k\n").wideArea.server?.description, "192.0.2.53:53")
    }

    func testBadValuesNameFileLineAndTheFix() {
        XCTAssertEqual(
            configError { try configuration("[WideArea]\nServer=ns1.example.net\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'ns1.example.net' for Server=: expected the server's IP address, optionally with a port: 192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53")
        XCTAssertEqual(
            configError { try configuration("[WideArea]\nDomain=local\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'local' for Domain=: 'local' is multicast DNS, which [Avahi] covers; name a unicast zone")
        XCTAssertEqual(
            configError { try configuration("[WideArea]\nDomain=a..b\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'a..b' for Domain=: expected a DNS domain such as services.example.net")
        XCTAssertEqual(
            configError { try configuration("[WideArea]\nKeyFile=update.key\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'update.key' for KeyFile=: expected an absolute path to a tsig-keygen key file, such as /etc/rpcd/update.key")
        XCTAssertEqual(
            configError { try configuration("[WideArea]\nAdvertiseAddress=host\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'host' for AdvertiseAddress=: expected an IP address other subnets reach this host at, such as 192.0.2.10 or 2001:db8::10")
        XCTAssertNotNil(configError { try configuration("[WideArea]\nTTL=1\n") })
        XCTAssertNotNil(configError { try configuration("[WideArea]\nLease=3\n") })
        XCTAssertEqual(
            configError { try configuration("[WideArea]\nKeyfile=/k\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: unknown key 'Keyfile' in section [WideArea]; did you mean 'KeyFile'?")
        XCTAssertEqual(
            configError { try configuration("[Widearea]\nTTL=60\n") }?.description,
            "/etc/rpcd/rpcd.conf:1: unknown section [Widearea]; did you mean [WideArea]?")
    }

    func testDomainNeedsServerAndKey() {
        XCTAssertEqual(
            configError { try configuration("[WideArea]\nTTL=60\nDomain=services.example.net\n") }?.description,
            "/etc/rpcd/rpcd.conf:3: [WideArea] Domain= needs Server= and KeyFile=: the primary server that accepts updates and the TSIG key to sign them with")
        XCTAssertEqual(
            configError { try configuration("[WideArea]\nDomain=x.test\nServer=192.0.2.53\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: [WideArea] Domain= needs KeyFile=: the primary server that accepts updates and the TSIG key to sign them with")
    }

    func testRenderedSectionParsesBack() throws {
        var settings = ServerConfiguration.defaults
        settings.wideArea = WideAreaSettings(
            domain: "services.example.net", server: DNSServerAddress(address: "192.0.2.53"), keyFile: "/etc/rpcd/update.key",
            ttl: 60, lease: 600, advertiseAddresses: ["192.0.2.10"])
        let text = settings.rendered()
        XCTAssertTrue(
            text.contains("[WideArea]\nDomain=services.example.net\nServer=192.0.2.53:53\nKeyFile=/etc/rpcd/update.key\nTTL=60\nLease=600\nAdvertiseAddress=192.0.2.10\n"), text)
        XCTAssertEqual(try configuration(text), settings)
    }
}
