import NIOCore
import NIOHTTP1
import XCTest

@testable import RPCConsole

final class WebConsoleTests: XCTestCase {
    private var page: ConsoleAsset { ConsoleAsset.embedded.first { $0.path == "/" }! }

    func testThePageIsServedWithItsTypeValidatorAndPolicy() {
        let response = WebConsole.response(for: page, requestHeaders: ["host": "127.0.0.1:7380"])
        XCTAssertEqual(response.status, .ok)
        XCTAssertEqual(response.body, page.body)
        XCTAssertEqual(response.headers["content-type"], ["text/html; charset=utf-8"])
        XCTAssertEqual(response.headers["etag"], [page.etag])
        XCTAssertEqual(response.headers["cache-control"], ["no-cache"])
        XCTAssertEqual(response.headers["x-content-type-options"], ["nosniff"])
        XCTAssertEqual(response.headers["referrer-policy"], ["no-referrer"])
        XCTAssertEqual(
            response.headers["content-security-policy"],
            ["default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                + "connect-src 'self' ws://127.0.0.1:7380 wss://127.0.0.1:7380; object-src 'none'; base-uri 'none'; "
                + "form-action 'none'; frame-ancestors 'none'"])
    }

    func testARevalidationOfTheSameBytesIsNotModified() {
        let fresh = WebConsole.response(for: page, requestHeaders: ["host": "localhost", "if-none-match": page.etag])
        XCTAssertEqual(fresh.status, .notModified)
        XCTAssertEqual(fresh.body.readableBytes, 0)
        XCTAssertEqual(fresh.headers["etag"], [page.etag])
        let listed = WebConsole.response(for: page, requestHeaders: ["host": "localhost", "if-none-match": "\"0000000000000000\", \(page.etag)"])
        XCTAssertEqual(listed.status, .notModified)
        let stale = WebConsole.response(for: page, requestHeaders: ["host": "localhost", "if-none-match": "\"0000000000000000\""])
        XCTAssertEqual(stale.status, .ok)
    }

    func testAHostThatIsNotPlainlyAnAuthorityAddsNothingToThePolicy() {
        for host in ["127.0.0.1:80; script-src *", "a b", "x\"y", ""] {
            let policy = WebConsole.contentSecurityPolicy(host: host)
            XCTAssertTrue(policy.contains("connect-src 'self'; "), policy)
            XCTAssertFalse(policy.contains("*"), policy)
        }
        XCTAssertTrue(WebConsole.contentSecurityPolicy(host: "[::1]:7380").contains("ws://[::1]:7380 wss://[::1]:7380"))
    }

    func testEveryEmbeddedFileIsAResourceJudgedAsRPCDiscover() {
        let resources = WebConsole.resources()
        XCTAssertEqual(resources.map(\.path).sorted(), ConsoleAsset.embedded.map(\.path).sorted())
        XCTAssertTrue(resources.allSatisfy { $0.method == "rpc.discover" })
    }
}
