import RPCProtocol
import XCTest

final class RPCEndpointTests: XCTestCase {
    func testParsesEveryForm() throws {
        XCTAssertEqual(try RPCEndpoint(parsing: "127.0.0.1:7390"), .tcp(host: "127.0.0.1", port: 7390))
        XCTAssertEqual(try RPCEndpoint(parsing: "[::1]:80"), .tcp(host: "::1", port: 80))
        XCTAssertEqual(try RPCEndpoint(parsing: "localhost:0"), .tcp(host: "localhost", port: 0))
        XCTAssertEqual(try RPCEndpoint(parsing: " /run/rpcd/rpcd.sock "), .unix(path: "/run/rpcd/rpcd.sock"))
        XCTAssertEqual(try RPCEndpoint(parsing: "[fe80::1%eth0]:65535"), .tcp(host: "fe80::1%eth0", port: 65535))
        XCTAssertEqual(try RPCEndpoint(parsing: "tls://0.0.0.0:7391"), .tls(host: "0.0.0.0", port: 7391))
        XCTAssertEqual(try RPCEndpoint(parsing: "tls://[::]:7391"), .tls(host: "::", port: 7391))
    }

    func testDescriptionRoundTrips() throws {
        for text in ["127.0.0.1:7390", "[::1]:80", "/tmp/x.sock", "example.org:1", "tls://example.org:1", "tls://[::1]:2"] {
            XCTAssertEqual(try RPCEndpoint(parsing: text).description, text)
        }
    }

    func testRejectsMalformedAddressesWithAReason() {
        let cases: [(String, String)] = [
            ("", "empty"),
            ("127.0.0.1", "expected HOST:PORT"),
            ("127.0.0.1:", "port"),
            ("127.0.0.1:65536", "port"),
            ("127.0.0.1:-1", "port"),
            ("127.0.0.1:80x", "port"),
            (":80", "host is empty"),
            ("::1:80", "brackets"),
            ("[::1:80", "closing ']'"),
            ("[::1]80", "':PORT'"),
            ("[127.0.0.1]:80", "IPv6 addresses only"),
            ("relative/path.sock", "expected HOST:PORT"),
            ("/" + String(repeating: "a", count: 120), "shorter than 108"),
            ("tls:///run/rpcd/rpcd.sock", "expected tls://HOST:PORT"),
            ("tls://7391", "expected tls://HOST:PORT"),
            ("TLS://0.0.0.0:1", "unknown scheme 'TLS://'; tls://, http://, https:// and http+unix: are known"),
            ("ws://example.org:443", "unknown scheme 'ws://'"),
            ("http://example.org", "expected http://HOST:PORT"),
            ("https:///run/x.sock", "expected https://HOST:PORT"),
            ("http+unix:relative.sock", "expected http+unix:/ABSOLUTE/PATH"),
        ]
        for (text, reason) in cases {
            XCTAssertThrowsError(try RPCEndpoint(parsing: text), text) { error in
                let message = (error as? RPCEndpointError)?.description ?? ""
                XCTAssertTrue(message.contains(reason), "\(text): \(message)")
            }
        }
    }

    func testHTTPFormsRoundTrip() throws {
        let cases: [(String, RPCEndpoint)] = [
            ("http://127.0.0.1:7380", .http(host: "127.0.0.1", port: 7380)),
            ("https://[::]:7381", .https(host: "::", port: 7381)),
            ("http+unix:/run/rpcd/http.sock", .httpUnix(path: "/run/rpcd/http.sock")),
        ]
        for (text, endpoint) in cases {
            XCTAssertEqual(try RPCEndpoint(parsing: text), endpoint, text)
            XCTAssertEqual(endpoint.description, text)
            XCTAssertTrue(endpoint.isHTTP, text)
        }
        XCTAssertEqual(try RPCEndpoint(parsing: "http://localhost:7380/"), .http(host: "localhost", port: 7380))
        XCTAssertTrue(RPCEndpoint.https(host: "::", port: 1).isTLS)
        XCTAssertFalse(RPCEndpoint.http(host: "::", port: 1).isTLS)
        XCTAssertEqual(RPCEndpoint.http(host: "h", port: 0).withPort(9), .http(host: "h", port: 9))
        XCTAssertEqual(RPCEndpoint.httpUnix(path: "/x").unixPath, "/x")
    }

    func testLoopbackDetection() throws {
        XCTAssertTrue(try RPCEndpoint(parsing: "127.0.0.1:1").isLoopback)
        XCTAssertTrue(try RPCEndpoint(parsing: "[::1]:1").isLoopback)
        XCTAssertFalse(try RPCEndpoint(parsing: "0.0.0.0:1").isLoopback)
        XCTAssertFalse(try RPCEndpoint(parsing: "/run/x.sock").isLoopback)
        XCTAssertTrue(try RPCEndpoint(parsing: "tls://127.0.0.1:1").isLoopback)
        XCTAssertFalse(try RPCEndpoint(parsing: "tls://0.0.0.0:1").isLoopback)
        XCTAssertTrue(try RPCEndpoint(parsing: "http://127.0.0.1:1").isLoopback)
        XCTAssertFalse(try RPCEndpoint(parsing: "https://0.0.0.0:1").isLoopback)
    }
}
