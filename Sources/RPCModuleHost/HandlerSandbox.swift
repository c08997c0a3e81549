import RPCConfig

/// What a module host process may touch (`Isolation=process`; docs/SECURITY.md, "Module sandbox"): the
/// handler file's `ReadWritePaths=` and `MemoryMax=`, and how they cross to the host (its arguments, so the
/// host applies them in `main`, before it starts a thread).
package struct HandlerSandbox: Hashable, Sendable {
    /// Absolute paths the module may create, write and delete beneath; everywhere else it may at most read
    /// system libraries, its own module directory, `/proc` and `/sys`.
    package var readWritePaths: [String] = []
    /// The handler's state directory (`StateDirectory=` beneath rpcd's state root), resolved by `HandlerSet`;
    /// writable as a `ReadWritePaths=` entry is, and handed to the module (`state_directory`, `stateDirectory`).
    package var stateDirectory: String?
    /// The host's memory limit: its cgroup's `memory.max`, over every process it starts, where rpcd has a
    /// cgroup with the memory controller; otherwise each process's data (`RLIMIT_DATA`). nil: none.
    package var memoryMax: Int? = defaultMemoryMax
    /// The processes and threads the host may have at once: its cgroup's `pids.max`, where rpcd has a cgroup
    /// with the pids controller; otherwise its user's `RLIMIT_NPROC` when it runs as a user of its own, or
    /// nothing (`HostWalls` logs which). nil: none.
    package var tasksMax: Int? = defaultTasksMax

    package static let defaultMemoryMax = 512 << 20
    static let memoryMaxRange = (16 << 20)...(1 << 50)
    /// A host itself runs 4 threads and `max(2, cores)` workers for methods that may block.
    package static let defaultTasksMax = 128
    static let tasksMaxRange = 8...4_194_304

    package init() {}

    @Sendable static func parsePath(_ entry: INIEntry) throws(ConfigError) -> String {
        guard entry.value.hasPrefix("/"), !entry.value.split(separator: "/").contains("..") else {
            throw entry.invalidValue(expected: "expected an absolute path without '..'")
        }
        return entry.value
    }

    /// Every path the module may write beneath: `ReadWritePaths=` and the state directory.
    package var writablePaths: [String] { readWritePaths + (stateDirectory.map { [$0] } ?? []) }

    /// The host's command-line arguments for this sandbox (`ModuleHostArguments` reads them back).
    var arguments: [String] {
        readWritePaths.flatMap { ["--read-write", $0] } + (stateDirectory.map { ["--state-directory", $0] } ?? [])
            + ["--memory-max", memoryMax.map(String.init) ?? "infinity"]
    }
}
