package import Foundation

/// A handlers.d of a test's own, for daemons started with `DaemonOptions(handlers:)`: it outlives a daemon (a
/// test can restart one on the same files, or change them and reload), and is removed with the last reference.
package final class HandlersDirectory {
    package let url: URL

    package init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-handlers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    package var path: String { url.path }

    /// A directory for what isolated modules write (`ReadWritePaths=`), made on first use: not the handlers.d
    /// itself, which a module host's user must never be able to write (rpcd would refuse the handler files).
    package var stateDirectory: String {
        let state = url.appendingPathComponent("state")
        try? FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        return state.path
    }

    /// The path of `file` inside the directory.
    package func path(_ file: String) -> String { url.appendingPathComponent(file).path }

    /// Writes `NAME.conf`.
    package func write(_ name: String, _ text: String) throws {
        try text.write(toFile: path("\(name).conf"), atomically: true, encoding: .utf8)
    }

    /// Writes `NAME.conf` as `[Handler] Module=NAME` for each example module in `names`.
    /// A handler file per module; `isolation` is its `Isolation=` (the default, a module host, when nil).
    package func writeModules(_ names: [String], isolation: String? = nil) throws {
        for name in names { try write(name, "[Handler]\nModule=\(name)\n" + (isolation.map { "Isolation=\($0)\n" } ?? "")) }
    }

    package func remove(_ name: String) throws {
        try FileManager.default.removeItem(atPath: path("\(name).conf"))
    }
}
