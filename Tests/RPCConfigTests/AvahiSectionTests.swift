import RPCConfig
import RPCDNSSD
import XCTest

final class AvahiSectionTests: XCTestCase {
    func testDefaultsAdvertiseEverywhere() {
        let avahi = ServerConfiguration.defaults.avahi
        XCTAssertTrue(avahi.enabled)
        XCTAssertEqual(avahi.instanceName.text, "%s on %h")
        XCTAssertEqual(avahi.interfaces, [])
        XCTAssertEqual(avahi.protocols, .any)
    }

    func testEveryKeyParses() throws {
        let avahi = try configuration(
            "[Avahi]\nEnabled=no\nInstanceName=rpcd %s (%h) 100%%\nInterfaces=eth0\nInterfaces=veth-a1\nProtocols=IPv4\n").avahi
        XCTAssertFalse(avahi.enabled)
        XCTAssertEqual(avahi.instanceName.expand(service: "calc", host: "box"), "rpcd calc (box) 100%")
        XCTAssertEqual(avahi.interfaces, ["eth0", "veth-a1"])
        XCTAssertEqual(avahi.protocols, .ipv4)
    }

    func testEmptyAssignmentsReset() throws {
        let avahi = try configuration("[Avahi]\nInterfaces=eth0\nInterfaces=\nInstanceName=x %s\nInstanceName=\n").avahi
        XCTAssertEqual(avahi.interfaces, [])
        XCTAssertEqual(avahi.instanceName, .default)
    }

    func testBadValuesNameFileLineAndTheFix() {
        XCTAssertEqual(
            configError { try configuration("[Avahi]\n\nInstanceName=%s on %x\n") }?.description,
            "/etc/rpcd/rpcd.conf:3: invalid value '%s on %x' for InstanceName=: unknown specifier %x; use %s (service), %h (host name) or %% (a percent sign)")
        XCTAssertEqual(
            configError { try configuration("[Avahi]\nInstanceName=rpcd on %h\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'rpcd on %h' for InstanceName=: it needs %s, or every service would get the same name")
        XCTAssertEqual(
            configError { try configuration("[Avahi]\nProtocols=both\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'both' for Protocols=: expected ipv4, ipv6 or any")
        XCTAssertEqual(
            configError { try configuration("[Avahi]\nInterfaces=a-very-long-interface-name\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'a-very-long-interface-name' for Interfaces=: expected a network interface name such as eth0 (1 to 15 characters, no '/', ':' or blanks)")
        XCTAssertEqual(
            configError { try configuration("[Avahi]\nEnabled=sometimes\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'sometimes' for Enabled=: expected a boolean: yes or no (also true/false, on/off, 1/0)")
        XCTAssertEqual(
            configError { try configuration("[avahi]\nEnabled=no\n") }?.description,
            "/etc/rpcd/rpcd.conf:1: unknown section [avahi]; did you mean [Avahi]?")
    }

    func testRenderedAvahiSectionParsesBack() throws {
        var settings = ServerConfiguration.defaults
        settings.avahi = AvahiSettings(
            enabled: false, instanceName: try DNSSDInstanceNameTemplate(parsing: "%h: %s"), interfaces: ["eth1", "eth2"],
            protocols: .ipv6)
        let text = settings.rendered()
        XCTAssertTrue(text.contains("[Avahi]\nEnabled=no\nInstanceName=%h: %s\nInterfaces=eth1\nInterfaces=eth2\nProtocols=ipv6\n"), text)
        XCTAssertEqual(try configuration(text), settings)
    }
}
