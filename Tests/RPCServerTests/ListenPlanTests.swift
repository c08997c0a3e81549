import RPCProtocol
@testable import RPCServer
import XCTest

/// Which `Listen=` addresses rpcd binds itself: every one that no passed socket and no wildcard listener
/// already serves, so that rpcd.conf means the same with or without rpcd.socket (issue 27).
final class ListenPlanTests: XCTestCase {
    private let shipped: [RPCEndpoint] = [.unix(path: "/run/rpcd/rpcd.sock"), .tcp(host: "127.0.0.1", port: 7390)]

    func testWithoutPassedSocketsEveryAddressIsBound() throws {
        let plan = try RPCServer.plan(listen: shipped, adopted: [])
        XCTAssertEqual(plan.bind, shipped)
        XCTAssertEqual(plan.covered, [])
    }

    func testAddressesThePassedSocketsHoldAreServedThroughThemAndTheRestBound() throws {
        let listen = shipped + [.tcp(host: "127.0.0.1", port: 7392), .tls(host: "::1", port: 7391)]
        let plan = try RPCServer.plan(listen: listen, adopted: shipped)
        XCTAssertEqual(plan.bind, [.tcp(host: "127.0.0.1", port: 7392), .tls(host: "::1", port: 7391)])
        XCTAssertEqual(plan.covered, shipped)
    }

    func testIPv6SpellingsOfOneAddressMatch() throws {
        let plan = try RPCServer.plan(listen: [.tcp(host: "0:0:0:0:0:0:0:1", port: 7390)], adopted: [.tcp(host: "::1", port: 7390)])
        XCTAssertEqual(plan.bind, [])
    }

    func testAWildcardListenerServesTheSpecificAddressesOfItsFamilyPortAndScheme() throws {
        // The docs' "add Listen=0.0.0.0:7390" beside the shipped Listen=127.0.0.1:7390.
        let listen = shipped + [
            .tcp(host: "0.0.0.0", port: 7390), .tcp(host: "::1", port: 7390), .tls(host: "127.0.0.1", port: 7391),
            .tcp(host: "127.0.0.1", port: 7391),
        ]
        let plan = try RPCServer.plan(listen: listen, adopted: [])
        XCTAssertEqual(plan.covered, [.tcp(host: "127.0.0.1", port: 7390)])
        XCTAssertEqual(plan.bind, [
            .unix(path: "/run/rpcd/rpcd.sock"), .tcp(host: "0.0.0.0", port: 7390), .tcp(host: "::1", port: 7390),
            .tls(host: "127.0.0.1", port: 7391), .tcp(host: "127.0.0.1", port: 7391),
        ])
    }

    func testATLSAddressThatAPassedPlainSocketHoldsIsRefusedByName() throws {
        XCTAssertThrowsError(try RPCServer.plan(listen: [.tls(host: "127.0.0.1", port: 7390)], adopted: shipped)) { error in
            XCTAssertTrue("\(error)".contains("tls://127.0.0.1:7390"), "\(error)")
            XCTAssertTrue("\(error)".contains("serves plain TCP"), "\(error)")
        }
    }

    func testEphemeralPortsAndRepeatsAreBoundOnce() throws {
        let plan = try RPCServer.plan(
            listen: [.tcp(host: "127.0.0.1", port: 0), .tcp(host: "127.0.0.1", port: 0), .unix(path: "/a"), .unix(path: "/a")],
            adopted: [])
        XCTAssertEqual(plan.bind, [.tcp(host: "127.0.0.1", port: 0), .tcp(host: "127.0.0.1", port: 0), .unix(path: "/a")])
    }

    func testAPassedSocketWhoseAddressListenNamesAsHTTPIsServedAsHTTP() throws {
        let listen: [RPCEndpoint] = [.http(host: "127.0.0.1", port: 7380), .httpUnix(path: "/run/rpcd/http.sock"), .tcp(host: "::1", port: 7390)]
        let adopted = [RPCEndpoint.tcp(host: "127.0.0.1", port: 7380), .unix(path: "/run/rpcd/http.sock"), .tcp(host: "::1", port: 7390)]
            .map { RPCServer.servedScheme(of: $0, listen: listen) }
        XCTAssertEqual(adopted, listen)
        let plan = try RPCServer.plan(listen: listen, adopted: adopted)
        XCTAssertEqual(plan.bind, [])
        XCTAssertEqual(plan.covered, listen)
    }

    func testAWildcardHTTPListenerCoversOnlyHTTPAddresses() throws {
        let listen: [RPCEndpoint] = [.http(host: "0.0.0.0", port: 7380), .http(host: "127.0.0.1", port: 7380), .tcp(host: "127.0.0.1", port: 7380)]
        let plan = try RPCServer.plan(listen: listen, adopted: [])
        XCTAssertEqual(plan.covered, [.http(host: "127.0.0.1", port: 7380)])
        XCTAssertEqual(plan.bind, [.http(host: "0.0.0.0", port: 7380), .tcp(host: "127.0.0.1", port: 7380)])
    }
}
