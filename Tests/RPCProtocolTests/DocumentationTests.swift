import Foundation
import RPCProtocol
import XCTest

/// What the docs a user reads say of the protocol's vocabulary holds to the code, and the docs render (issue 40).
final class DocumentationTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private func text(_ relativePath: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    /// A man page's text with the escapes that split words undone (`\%`, `\&`, `\-`).
    private func manText(_ relativePath: String) throws -> String {
        try text(relativePath).replacingOccurrences(of: "\\%", with: "").replacingOccurrences(of: "\\&", with: "")
            .replacingOccurrences(of: "\\-", with: "-")
    }

    /// The text from `start` to the next line beginning with `end` (or the end of the text).
    private func section(_ text: String, from start: String, to end: String) throws -> Substring {
        let begin = try XCTUnwrap(text.range(of: start), "no \(start)")
        let rest = text[begin.upperBound...]
        let stop = rest.range(of: "\n" + end)?.lowerBound ?? rest.endIndex
        return text[begin.lowerBound..<stop]
    }

    private static let listenerSchemes = [
        RPCEndpoint.tlsScheme, RPCEndpoint.httpScheme, RPCEndpoint.httpsScheme, RPCEndpoint.httpUnixScheme,
    ]

    /// Every place that says what an address may be names every listener form rpcd parses.
    func testEveryListenerFormIsWhereAddressesAreDescribed() throws {
        let config = try text("docs/CONFIG.md")
        let places: [(String, Substring)] = [
            ("CONFIG.md value types", try section(config, from: "| address |", to: "|")),
            ("CONFIG.md Listen=", try section(config, from: "### `Listen=`", to: "### ")),
            ("rpcd.conf(5) address", try section(try manText("man/rpcd.conf.5"), from: ".I address\n", to: ".TP")),
            ("rpcd(8) --listen", try section(try manText("man/rpcd.8"), from: ".BI --listen", to: ".TP")),
        ]
        for (place, said) in places {
            for scheme in Self.listenerSchemes {
                XCTAssertTrue(said.contains(scheme), "\(place) does not name \(scheme)")
            }
        }
        // The error for an address that parses as none of them names them too.
        XCTAssertThrowsError(try RPCEndpoint(parsing: "localhost")) { error in
            for scheme in Self.listenerSchemes {
                XCTAssertTrue("\(error)".contains(scheme), "\(error)")
            }
        }
    }

    /// Every Markdown file a user reads has balanced code fences: one left open renders the rest of the page
    /// as code (RPCCTL.md's TLS section did).
    func testMarkdownCodeFencesAreBalanced() throws {
        let manager = FileManager.default
        var files = ["README.md"]
        for directory in ["docs", "examples", "bench", "fuzz", "packaging"] {
            let enumerator = try XCTUnwrap(manager.enumerator(atPath: Self.root.appendingPathComponent(directory).path))
            for case let path as String in enumerator where path.hasSuffix(".md") && !path.contains(".build") {
                files.append("\(directory)/\(path)")
            }
        }
        XCTAssertGreaterThan(files.count, 10)
        for file in files {
            var open: (fence: String, line: Int)?
            for (number, line) in try text(file).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let trimmed = line.drop { $0 == " " }
                guard let marker = trimmed.first, marker == "`" || marker == "~" else { continue }
                let fence = String(trimmed.prefix { $0 == marker })
                guard fence.count >= 3 else { continue }
                if let current = open {
                    // CommonMark: a closing fence is at least as long as the opening one, with nothing after it.
                    if fence.first == current.fence.first, fence.count >= current.fence.count,
                       trimmed.dropFirst(fence.count).allSatisfy(\.isWhitespace) {
                        open = nil
                    }
                } else {
                    open = (fence, number + 1)
                }
            }
            XCTAssertNil(open, "\(file): the code fence opened on line \(open?.line ?? 0) is never closed")
        }
    }

    /// The hello-c example builds against the header where rpcd-dev installs it.
    func testTheCExampleNamesTheInstalledHeadersDirectory() throws {
        let installed = try text("packaging/debian/rpcd-dev.install").split(separator: "\n")
            .first { $0.hasSuffix("/rpcd_module.h") }
        let directory = "/" + (try XCTUnwrap(installed).dropLast("/rpcd_module.h".count))
        XCTAssertEqual(directory, "/usr/include/rpcd")
        for file in ["examples/modules/hello-c/README.md", "examples/modules/hello-c/Makefile"] {
            let said = try text(file)
            XCTAssertTrue(said.contains("RPCD_INCLUDE=\(directory)"), "\(file) does not say RPCD_INCLUDE=\(directory)")
            XCTAssertFalse(said.contains("RPCD_INCLUDE=/usr/include "), "\(file) names /usr/include")
            XCTAssertFalse(said.contains("RPCD_INCLUDE=/usr/include`"), "\(file) names /usr/include")
        }
    }
}
