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
        FileManager.default.createFile(atPath: root.appendingPathComponent(path).path, contents: Data())
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
}
