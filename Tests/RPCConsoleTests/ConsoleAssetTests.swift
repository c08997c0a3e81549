import Foundation
import NIOCore
import NIOHTTP1
import XCTest

@testable import RPCConsole

/// The embedded console is console/ as committed: ConsoleAssets.swift is generated (scripts/embed-console.py,
/// `make console`), and this test fails while it is stale, naming the fix.
final class ConsoleAssetTests: XCTestCase {
    private static let consoleDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("console")

    func testTheEmbeddedFilesAreConsoleDirectorysByteForByte() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.consoleDirectory.path)
            .filter { !$0.hasPrefix(".") }.sorted()
        let fix = "ConsoleAssets.swift is stale: run `make console` (scripts/embed-console.py) and commit it"
        XCTAssertEqual(ConsoleAsset.embedded.map(\.file), files, fix)
        for asset in ConsoleAsset.embedded {
            let source = try Data(contentsOf: Self.consoleDirectory.appendingPathComponent(asset.file))
            XCTAssertTrue(asset.body.readableBytesView.elementsEqual(source), "\(asset.file) differs from console/\(asset.file): \(fix)")
        }
    }

    func testEveryFileHasAKnownContentTypeAndADistinctPath() {
        XCTAssertEqual(Set(ConsoleAsset.embedded.map(\.path)).count, ConsoleAsset.embedded.count)
        XCTAssertTrue(ConsoleAsset.embedded.contains { $0.path == "/" && $0.contentType == "text/html; charset=utf-8" })
        for asset in ConsoleAsset.embedded {
            XCTAssertNotEqual(asset.contentType, "application/octet-stream", "\(asset.file): give its extension a Content-Type")
        }
    }

    func testTheETagFollowsTheBytes() {
        let a = ConsoleAsset(file: "x.js", text: "let a = 1\n")
        XCTAssertEqual(a.etag, ConsoleAsset(file: "x.js", text: "let a = 1\n").etag)
        XCTAssertNotEqual(a.etag, ConsoleAsset(file: "x.js", text: "let a = 2\n").etag)
        XCTAssertTrue(a.etag.hasPrefix("\"") && a.etag.hasSuffix("\"") && a.etag.count == 18, a.etag)
    }

    /// The page works under its own policy only if it has no inline script or style and loads nothing from
    /// elsewhere: checked here on the source, and by the browser test (no CSP violation in Chromium's log).
    func testThePageNeedsNothingThePolicyForbids() throws {
        let html = String(decoding: try XCTUnwrap(ConsoleAsset.embedded.first { $0.path == "/" }).body.readableBytesView, as: UTF8.self)
        XCTAssertNil(html.range(of: #"<script>"#), "inline script")
        XCTAssertNil(html.range(of: #"<style"#), "inline style")
        XCTAssertNil(html.range(of: #" style=""#), "inline style attribute")
        XCTAssertNil(html.range(of: #" on[a-z]+="#, options: .regularExpression), "inline event handler")
        XCTAssertNil(html.range(of: #"(src|href)="(https?:)?//"#, options: .regularExpression), "a resource of another origin")
    }
}
