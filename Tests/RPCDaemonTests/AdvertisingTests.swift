import Logging
import RPCAvahi
import RPCConfig
import RPCDNSSD
@testable import RPCDaemon
import RPCProtocol
import XCTest

/// What rpcd announces over DNS-SD, decided from its listeners alone: no Avahi, no network.
final class AdvertisingTests: XCTestCase {
    private func endpoints(_ texts: String...) throws -> [RPCEndpoint] {
        try texts.map { try RPCEndpoint(parsing: $0) }
    }

    /// Only framed TCP listeners other machines reach are `_rpcd._tcp` ports: each once, in listener order.
    func testPortsAreTheReachableFramedTCPListenersOnce() throws {
        let listeners = try endpoints(
            "0.0.0.0:5000", "127.0.0.1:5001", "[::1]:5002", "localhost:5003", "/run/rpcd/rpcd.sock",
            "http://0.0.0.0:8080", "tls://0.0.0.0:5443", "[::]:5000", "192.0.2.1:5004")
        XCTAssertEqual(Advertising.ports(of: listeners), [5000, 5443, 5004])
        XCTAssertEqual(Advertising.tlsPorts(of: listeners), [5443])
    }

    /// HTTP listeners go into the TXT records, and the console's page is announced on the first reachable one,
    /// `https://` first; without a page's path, or a reachable HTTP listener, there is no page to announce.
    func testTheWebPageIsOnTheFirstReachableHTTPListenerHTTPSFirst() throws {
        let listeners = try endpoints("http://127.0.0.1:8000", "http://0.0.0.0:8080", "https://0.0.0.0:8443", "http://[::]:8081")
        XCTAssertEqual(Advertising.httpPort(of: listeners, tls: false), 8080)
        XCTAssertEqual(Advertising.httpPort(of: listeners, tls: true), 8443)
        XCTAssertEqual(Advertising.webPage(path: "/", listeners: listeners), RPCWebPageAdvertisement(path: "/", port: 8443, tls: true))
        XCTAssertEqual(
            Advertising.webPage(path: "/", listeners: try endpoints("http://0.0.0.0:8080")),
            RPCWebPageAdvertisement(path: "/", port: 8080, tls: false))
        XCTAssertNil(Advertising.webPage(path: nil, listeners: listeners))
        XCTAssertNil(Advertising.webPage(path: "/", listeners: try endpoints("http://127.0.0.1:8080", "0.0.0.0:5000")))
    }

    /// Advertising off, or nothing another machine could reach: the no-op publisher, and Avahi is never asked.
    func testNothingToAnnounceMakesTheNoopPublisher() throws {
        var off = AvahiSettings()
        off.enabled = false
        let logger = Logger(label: "test")
        XCTAssert(Advertising.makePublisher(settings: off, listeners: try endpoints("0.0.0.0:5000"), logger: logger) is NoopServicePublisher)
        XCTAssert(
            Advertising.makePublisher(
                settings: AvahiSettings(), listeners: try endpoints("127.0.0.1:5000", "/run/rpcd.sock", "http://[::1]:8080"),
                webPagePath: "/", logger: logger) is NoopServicePublisher)
    }

    /// Wide-area records carry `AdvertiseAddress=` when given, else the specific addresses the listeners bind
    /// (loopback and wildcards left out), each once; no wide-area publisher without a domain.
    func testWideAreaAddressesComeFromSettingsThenListeners() throws {
        var settings = WideAreaSettings()
        settings.advertiseAddresses = ["198.51.100.7"]
        XCTAssertEqual(WideAreaAdvertising.addresses(settings: settings, listeners: try endpoints("192.0.2.1:5000")), ["198.51.100.7"])
        settings.advertiseAddresses = []
        XCTAssertEqual(
            WideAreaAdvertising.addresses(
                settings: settings, listeners: try endpoints("192.0.2.9:5000", "127.0.0.1:5001", "192.0.2.1:5002", "tls://192.0.2.9:5443")),
            ["192.0.2.1", "192.0.2.9"])
        XCTAssertNil(
            WideAreaAdvertising.makePublisher(
                settings: .defaults, key: nil, listeners: try endpoints("0.0.0.0:5000"), logger: Logger(label: "test")))
        XCTAssertNil(try WideAreaAdvertising.key(for: .defaults))
    }
}
