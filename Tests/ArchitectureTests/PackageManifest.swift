import Foundation
import XCTest

/// Package.swift as SwiftPM reads it, for the tests that hold the docs and the sources to it.
enum PackageManifest {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `swift package dump-package`'s JSON, without the fuzz harnesses (they exist only with `RPCD_FUZZ=1`). Run
    /// with a scratch path of its own, so that it never waits for the build folder that `swift test` holds.
    static func dump(package: URL = repository) throws -> [String: Any] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-dump-package-\(getpid())-\(UUID())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "--package-path", package.path, "--scratch-path", scratch.path, "dump-package"]
        var environment = ProcessInfo.processInfo.environment
        environment["RPCD_FUZZ"] = nil
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "swift package dump-package failed (is `swift` on PATH?)")
        return try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// A target's dependencies: the package's own targets, and products of other packages.
    struct Dependencies: Equatable, CustomStringConvertible {
        var targets: Set<String>
        var products: Set<String>

        var description: String {
            let own = targets.sorted().joined(separator: ", ")
            return products.isEmpty ? own : "\(own) [\(products.sorted().joined(separator: ", "))]"
        }
    }

    /// Every target but the tests of a dumped manifest, with its dependencies.
    static func graph(_ manifest: [String: Any]) throws -> [String: Dependencies] {
        var graph: [String: Dependencies] = [:]
        for target in try XCTUnwrap(manifest["targets"] as? [[String: Any]]) where target["type"] as? String != "test" {
            let name = try XCTUnwrap(target["name"] as? String)
            var dependencies = Dependencies(targets: [], products: [])
            for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                if let byName = dependency["byName"] as? [Any], let target = byName.first as? String {
                    dependencies.targets.insert(target)
                } else if let target = (dependency["target"] as? [Any])?.first as? String {
                    dependencies.targets.insert(target)
                } else if let product = (dependency["product"] as? [Any])?.first as? String {
                    dependencies.products.insert(product)
                }
            }
            graph[name] = dependencies
        }
        return graph
    }

    /// The Swift files of a dumped manifest's target (its `path`, or Sources/NAME).
    static func swiftFiles(of target: [String: Any]) throws -> [URL] {
        let name = try XCTUnwrap(target["name"] as? String)
        let directory = repository.appendingPathComponent(target["path"] as? String ?? "Sources/\(name)")
        guard let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        return files.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    }
}
