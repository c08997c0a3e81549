import RPCConfig
import RPCProtocol
import XCTest

final class HTTPSectionTests: XCTestCase {
    func testDefaultsAllowNoOtherOrigin() {
        XCTAssertEqual(ServerConfiguration.defaults.http, HTTPSettings())
        XCTAssertTrue(ServerConfiguration.defaults.http.allowOrigins.isEmpty)
        XCTAssertTrue(ServerConfiguration.defaults.http.console, "the console is on wherever an HTTP listener is")
    }

    func testConsoleCanBeTurnedOff() throws {
        XCTAssertFalse(try configuration("[HTTP]\nConsole=no\n").http.console)
        XCTAssertThrowsError(try configuration("[HTTP]\nConsole=maybe\n"))
    }

    func testEveryKeyParsesAndRendersBack() throws {
        let settings = try configuration("""
            [Server]
            Listen=http://127.0.0.1:7380
            Listen=http+unix:/run/rpcd/http.sock
            [HTTP]
            AllowOrigins=https://dashboard.example.net
            AllowOrigins=http://localhost:3000
            ServerNames=RPCD.example.net

            """)
        XCTAssertEqual(settings.listen, [.http(host: "127.0.0.1", port: 7380), .httpUnix(path: "/run/rpcd/http.sock")])
        XCTAssertEqual(
            settings.http,
            HTTPSettings(allowOrigins: ["https://dashboard.example.net", "http://localhost:3000"], serverNames: ["rpcd.example.net"]))
        XCTAssertEqual(try configuration(settings.rendered()), settings)
    }

    func testProblemsNameTheLineAndTheForm() {
        XCTAssertEqual(
            configError { try configuration("[HTTP]\nAllowOrigins=https://example.net/\n") }?.line, 2)
        XCTAssertTrue(
            configError { try configuration("[HTTP]\nAllowOrigins=example.net\n") }?.description.contains("SCHEME://HOST[:PORT]") ?? false)
        XCTAssertTrue(
            configError { try configuration("[HTTP]\nServerNames=bad name\n") }?.description.contains("host name") ?? false)
        XCTAssertEqual(
            configError { try configuration("[Server]\nListen=https://[::]:7381\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: Listen=https://[::]:7381 needs Certificate= and PrivateKey= in [TLS]")
    }
}
