import RPCConfig

/// What a module host process may touch (`Isolation=process`; docs/SECURITY.md, "Module sandbox"): the
/// handler file's `ReadWritePaths=` and `MemoryMax=`, and how they cross to the host (its arguments, so the
/// host applies them in `main`, before it starts a thread).
package struct HandlerSandbox: Hashable, Sendable {
    /// Absolute paths the module may create, write and delete beneath; everywhere else it may at most read
    /// system libraries, its own module directory, `/proc` and `/sys`.
    package var readWritePaths: [String] = []
    /// The host's data limit (heap and private mappings, `RLIMIT_DATA`); nil: none.
    package var memoryMax: Int? = defaultMemoryMax

    package static let defaultMemoryMax = 512 << 20
    static let memoryMaxRange = (16 << 20)...(1 << 50)

    package init() {}

    @Sendable static func parsePath(_ entry: INIEntry) throws(ConfigError) -> String {
        guard entry.value.hasPrefix("/"), !entry.value.split(separator: "/").contains("..") else {
            throw entry.invalidValue(expected: "expected an absolute path without '..'")
        }
        return entry.value
    }

    /// The host's command-line arguments for this sandbox (`ModuleHostArguments` reads them back).
    var arguments: [String] {
        readWritePaths.flatMap { ["--read-write", $0] } + ["--memory-max", memoryMax.map(String.init) ?? "infinity"]
    }
}
