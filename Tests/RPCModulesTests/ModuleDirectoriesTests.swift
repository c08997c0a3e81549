import Foundation
@testable import RPCModules
import XCTest

/// Bare `Module=` names are looked up in each module directory in turn; the first file found wins.
final class ModuleDirectoriesTests: XCTestCase {
    private var root: URL!

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("moddirs-\(UUID().uuidString)")
        for directory in ["local", "vendor"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: root)
    }

    private func touch(_ path: String) {
        XCTAssertTrue(FileManager.default.createFile(atPath: root.appendingPathComponent(path).path, contents: Data()), "made \(path)")
    }

    private func directories(_ names: String...) -> ModuleDirectories {
        ModuleDirectories(names.map { root.appendingPathComponent($0).path })
    }

    func testTheFirstDirectoryThatHasTheModuleWins() {
        touch("vendor/libcalc.so")
        let search = directories("local", "vendor")
        XCTAssertEqual(search.path(for: "calc"), root.appendingPathComponent("vendor/libcalc.so").path)
        touch("local/libcalc.so")
        XCTAssertEqual(search.path(for: "calc"), root.appendingPathComponent("local/libcalc.so").path, "the administrator's own module takes the package's place")
    }

    func testNAMEsoComesBeforeLibNAMEsoWithinADirectory() {
        touch("vendor/hello.so")
        touch("vendor/libhello.so")
        XCTAssertEqual(directories("local", "vendor").path(for: "hello"), root.appendingPathComponent("vendor/hello.so").path)
    }

    func testAMissingModuleIsReportedAtTheFirstPlaceLookedAndMissingDirectoriesAreSkipped() {
        let search = directories("absent", "local")
        XCTAssertEqual(search.path(for: "nothing"), root.appendingPathComponent("absent/nothing.so").path)
        touch("local/libkv.so")
        XCTAssertEqual(search.path(for: "kv"), root.appendingPathComponent("local/libkv.so").path)
    }

    func testTheDefaultPutsTheAdministratorsDirectoryFirstAndRepeatsAreDropped() {
        XCTAssertEqual(ModuleDirectories.standard.directories, ["/usr/local/lib/rpcd/modules", "/usr/lib/rpcd/modules"])
        XCTAssertEqual(ModuleDirectories(["/a", "/b", "/a"]).directories, ["/a", "/b"])
    }

    /// Every page that says where modules are looked for names every standard directory (issue 40: rpcd.conf(5)
    /// omitted /usr/local/lib/rpcd/modules).
    func testTheDocsNameEveryStandardModuleDirectory() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        func text(_ path: String) throws -> String {
            try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
                .replacingOccurrences(of: "\\%", with: "").replacingOccurrences(of: "\\-", with: "-")
        }
        /// From the line with `start` to the next line beginning with `end`.
        func section(_ text: String, _ start: String, _ end: String) throws -> Substring {
            let begin = try XCTUnwrap(text.range(of: start), start)
            let rest = text[begin.upperBound...]
            return text[begin.lowerBound..<(rest.range(of: "\n" + end)?.lowerBound ?? rest.endIndex)]
        }
        let places: [(String, Substring)] = [
            ("rpcd.conf(5) Module=", try section(try text("man/rpcd.conf.5"), ".BI Module= module", ".TP")),
            ("rpcd(8) --module-dir", try section(try text("man/rpcd.8"), ".BI --module-dir", ".TP")),
            ("CONFIG.md Module=", try section(try text("docs/CONFIG.md"), "| `Module=` |", "|")),
            ("MODULES.md Module= resolution", try section(try text("docs/MODULES.md"), "**`Module=` resolution.**", "\n")),
            ("README.md", try text("README.md")[...]),
        ]
        for (place, said) in places {
            for directory in ModuleDirectories.standard.directories {
                XCTAssertTrue(said.contains(directory), "\(place) does not name \(directory)")
            }
        }
    }

    /// The restart backoff doubles with each crash in a row, from the first (issue 40: a host that had run
    /// long restarted after 100 ms twice, its first start having left the interval).
    func testTheBackoffDoublesWithEachCrashInARow() {
        let policy = ModuleHostPolicy.standard
        XCTAssertEqual((1...7).map { policy.restartDelay(afterDeaths: $0) }, [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
            .milliseconds(3200), .seconds(5),
        ])
    }
}
