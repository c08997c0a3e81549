import Foundation
import RPCConfig
import XCTest

/// config/rpcd.conf and docs/CONFIG.md stay in step with the schema.
final class ExampleConfigurationTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private var keys: [String] { ServerConfiguration.schema.sections.flatMap { $0.keys.map(\.name) } }

    private func text(_ relativePath: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    func testExampleConfigurationLoadsToTheDefaults() throws {
        let path = Self.root.appendingPathComponent("config/rpcd.conf").path
        XCTAssertEqual(try ServerConfiguration.load(path: path), .defaults)
    }

    func testExampleConfigurationShowsEveryKeyWithItsDefault() throws {
        let example = try text("config/rpcd.conf")
        let rendered = ServerConfiguration.defaults.rendered().split(separator: "\n").filter { $0.contains("=") }
        for line in rendered {
            let shown = line.hasPrefix("Listen=") ? "\n\(line)\n" : "\n#\(line)\n"
            XCTAssertTrue(example.contains(shown), "config/rpcd.conf lacks \(shown.trimmingCharacters(in: .newlines))")
        }
        XCTAssertEqual(rendered.count, keys.count + 1)  // two Listen= lines
    }

    /// CONFIG.md's "Checking the configuration" shows what `rpcd --check-config` prints for the defaults,
    /// every line of it (issue 40: the sample had drifted behind the keys).
    func testCheckConfigSampleIsTheRealOutputForTheDefaults() throws {
        let reference = try text("docs/CONFIG.md")
        let section = try XCTUnwrap(reference.range(of: "## Checking the configuration and errors"))
        let block = try XCTUnwrap(reference.range(of: "```ini\n", range: section.upperBound..<reference.endIndex))
        let end = try XCTUnwrap(reference.range(of: "```", range: block.upperBound..<reference.endIndex))
        XCTAssertEqual(String(reference[block.upperBound..<end.lowerBound]), ServerConfiguration.defaults.rendered())
    }

    func testReferenceDocumentsEveryKey() throws {
        let reference = try text("docs/CONFIG.md")
        for key in keys {
            XCTAssertTrue(reference.contains("### `\(key)=`"), "docs/CONFIG.md has no heading for \(key)=")
        }
    }
}
