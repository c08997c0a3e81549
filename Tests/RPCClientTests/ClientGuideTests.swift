import Foundation
import XCTest

/// docs/CLIENT.md's complete program is the one in ClientGuideExample.swift, which compiles with the tests.
final class ClientGuideTests: XCTestCase {
    func testTheGuidesProgramIsTheCompiledOne() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let source = try String(contentsOf: root.appendingPathComponent("Tests/RPCClientTests/ClientGuideExample.swift"), encoding: .utf8)
        let guide = try String(contentsOf: root.appendingPathComponent("docs/CLIENT.md"), encoding: .utf8)
        let start = try XCTUnwrap(source.range(of: "// BEGIN EXAMPLE\n")).upperBound
        let end = try XCTUnwrap(source.range(of: "// END EXAMPLE")).lowerBound
        XCTAssertTrue(guide.contains("```swift\n" + source[start..<end] + "```"), "copy the example into docs/CLIENT.md")
    }
}
