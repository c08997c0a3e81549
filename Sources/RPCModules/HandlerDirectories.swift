package import RPCConfig

#if canImport(Glibc)
import Glibc
package import RPCModuleHost
#endif

/// Finds handler files in `handlers.d` directories with systemd's precedence and masking.
///
/// Directories are given lowest priority first (the order of `rpcd --handlers-dir`). For each file name the
/// highest-priority directory's `NAME.conf` is used; a symlink to /dev/null or an empty file there masks
/// the handler. Drop-ins `NAME.conf.d/*.conf` are collected from all directories (for equal names the
/// highest-priority one wins) and applied after the main file in lexical order, each overriding single keys.
/// This is what systemd does for units and for its own `*.conf.d` configuration.
package struct HandlerDirectories: Sendable {
    /// Lowest priority first: vendor defaults, then the administrator's (/etc overrides /usr/lib, as in
    /// systemd).
    /// There is no runtime directory (systemd's /run level): /run/rpcd is writable by the daemon itself, and a
    /// compromised daemon must not be able to leave handler files that outrank the vendor's across restarts.
    package static let defaults = ["/usr/lib/rpcd/handlers.d", "/etc/rpcd/handlers.d"]

    package var directories: [String]

    package init(directories: [String] = Self.defaults) {
        self.directories = directories
    }

    /// The outcome of reading every handler file.
    package struct Scan: Sendable {
        /// Enabled and disabled handlers, by name.
        package var handlers: [HandlerConfiguration] = []
        /// Handlers masked by a /dev/null symlink or an empty file: name and the masking file.
        package var masked: [(name: String, file: String)] = []
        /// Files that could not be read or parsed; their handlers are not served.
        package var errors: [ConfigError] = []
        /// Names of the handlers whose files had those errors.
        package var failedHandlers: [String] = []
    }

    package func scan() -> Scan {
        var scan = Scan()
        let highestFirst = Array(directories.reversed())
        let mainFiles: [String]
        do {
            mainFiles = try INIDocument.dropInFiles(in: highestFirst)
        } catch {
            scan.errors.append(error)
            return scan
        }
        for path in mainFiles {
            let fileName = String(path.split(separator: "/").last ?? "")
            let name = String(fileName.dropLast(".conf".count))
            do {
                var documents = [try Self.loadTrusted(path)]
                for dropIn in try INIDocument.dropInFiles(in: highestFirst.map { "\($0)/\(fileName).d" }) {
                    documents.append(try Self.loadTrusted(dropIn))
                }
                if let handler = try HandlerConfiguration.make(name: name, documents: documents) {
                    scan.handlers.append(handler)
                } else {
                    scan.masked.append((name, path))
                }
            } catch {
                scan.errors.append(error)
                scan.failedHandlers.append(name)
            }
        }
        return scan
    }

    /// Reads a handler file if it can be trusted (`FileTrust`): a handler file names the module rpcd runs, so
    /// one that others could write would let them choose its code's configuration. The file is opened once,
    /// judged by the descriptor's `fstat` and read through it (issue 21: a symlink swapped between a check by
    /// path and the open made rpcd read another file). A mask (the /dev/null device, which `load` tells by its
    /// device number) is only checked for where it lies.
    private static func loadTrusted(_ path: String) throws(ConfigError) -> INIDocument {
        try INIDocument.load(path: path) { info throws(ConfigError) in
            let isDevice = info.st_mode & S_IFMT == S_IFCHR
            let problem = isDevice ? FileTrust.problem(directoriesAbove: path) : FileTrust.problem(file: path, info: info)
            if let problem { throw ConfigError(file: path, line: nil, message: "refused: \(problem)") }
        }
    }
}
