import Foundation
import RPCConfig
import XCTest

/// The error `body` throws, or nil when it succeeds (so `XCTAssertEqual(…?.description, "…")`
/// fails both for a wrong message and for no error at all). Closures infer untyped throws, hence
/// the cast; anything but a ConfigError fails the test.
func configError<T>(_ body: () throws -> T, file: StaticString = #filePath, line: UInt = #line) -> ConfigError? {
    do {
        _ = try body()
        return nil
    } catch let error as ConfigError {
        return error
    } catch {
        XCTFail("expected a ConfigError, got \(error)", file: file, line: line)
        return nil
    }
}

/// An assignment as the parser would produce it, for testing value parsers.
func entry(_ value: String, key: String = "Key", line: Int = 3) -> INIEntry {
    INIEntry(section: "Server", key: key, value: value, file: "/test.conf", line: line)
}

/// Parses `text` as /etc/rpcd/rpcd.conf and applies it to the defaults.
func configuration(_ text: String, file: String = "/etc/rpcd/rpcd.conf") throws(ConfigError) -> ServerConfiguration {
    try ServerConfiguration(documents: [INIDocument.parse(text, file: file)])
}

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("rpcd-config-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `text` to `name` (relative to the directory), creating parent directories.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let file = path + "/" + name
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// Creates `name` as a symbolic link to `destination`.
    @discardableResult
    func symlink(_ name: String, to destination: String) throws -> String {
        let file = path + "/" + name
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: destination)
        return file
    }

    func makeDirectory(_ name: String) throws {
        try FileManager.default.createDirectory(atPath: path + "/" + name, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
