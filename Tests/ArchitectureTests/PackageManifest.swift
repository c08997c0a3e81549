import Foundation
import XCTest

/// Package.swift as SwiftPM reads it, for the tests that hold the docs and the sources to it.
enum PackageManifest {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `swift package dump-package`'s JSON, without the fuzz harnesses (they exist only with `RPCD_FUZZ=1`). Run
    /// with a scratch path of its own, so that it never waits for the build folder that `swift test` holds.
    static func dump() throws -> [String: Any] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-dump-package-\(getpid())-\(UUID())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "--package-path", repository.path, "--scratch-path", scratch.path, "dump-package"]
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
}
