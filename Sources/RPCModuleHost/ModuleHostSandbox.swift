import CRPCDHostSupport

#if canImport(Glibc)
import Glibc
#endif

/// Applies a handler's sandbox to the module host process it runs in (docs/SECURITY.md, "Module sandbox"):
/// Landlock lets the host read only system libraries, its module's directory, the files its own code is
/// mapped from, `/proc`, `/sys` and a few files of `/etc` that libc reads; write only its `ReadWritePaths=` and
/// the harmless devices; open no TCP connection or listener; signal no process outside its sandbox. rpcd's
/// configuration, its TLS key and other handlers' files are out of reach. A seccomp filter fails the system
/// calls no module needs (ptrace, namespaces, mounts, bpf, io_uring, kernel modules, ...). `MemoryMax=` becomes
/// `RLIMIT_DATA`.
/// Runs in `main`, before the host starts a thread.
enum ModuleHostSandbox {
    /// What was applied, for the host's first log entry.
    enum Outcome: Equatable, Sendable {
        case landlock(abi: Int32)
        /// The kernel has no Landlock: only the memory limit applies.
        case noLandlock
    }

    static func apply(_ arguments: ModuleHostArguments) throws(ModuleHostSandboxError) -> Outcome {
        if let bytes = arguments.sandbox.memoryMax {
            let result = rpcd_limit_memory(UInt64(bytes))
            guard result == 0 else { throw ModuleHostSandboxError(what: "MemoryMax=", errno: -result) }
        }
        let readable = readablePaths(modulePath: arguments.modulePath, program: arguments.startsProcesses)
        let writable = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"] + arguments.sandbox.writablePaths
        let result = withCStrings(readable) { read in
            withCStrings(writable) { write in rpcd_landlock_restrict(read, readable.count, write, writable.count) }
        }
        guard result >= 0 else { throw ModuleHostSandboxError(what: "Landlock", errno: -result) }
        let filter = rpcd_seccomp_deny_dangerous()
        guard filter == 0 else { throw ModuleHostSandboxError(what: "the system call filter", errno: -filter) }
        return result == 0 ? .noLandlock : .landlock(abi: result)
    }

    /// Everything the host needs to read to load and run its module, and no more.
    static func readablePaths(modulePath: String, program: Bool = false) -> [String] {
        var paths = ["/usr", "/lib", "/lib64", "/proc", "/sys"]
        // A program handler's program is any program: a shell, an interpreter and the commands it runs read their
        // configuration in /etc (file permissions still apply: the host's user is nobody's), and /dev/null.
        if program { paths += ["/etc", "/bin", "/sbin", "/dev/null", "/dev/urandom", "/dev/zero"] }
        // What the dynamic loader and libc read: its cache, the time zone, name service configuration.
        paths += [
            "/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/hosts",
            "/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf",
        ]
        paths.append(directory(of: modulePath))
        // Where the host's own code and libraries come from (a build tree, a toolchain, LD_LIBRARY_PATH).
        paths += mappedDirectories()
        if let libraryPath = getenv("LD_LIBRARY_PATH") {
            paths += String(cString: libraryPath).split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        }
        var seen = Set<String>()
        return paths.filter { seen.insert($0).inserted }
    }

    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// The directories of the files mapped into the process now (`/proc/self/maps`).
    private static func mappedDirectories() -> [String] {
        guard let file = fopen("/proc/self/maps", "r") else { return [] }
        defer { fclose(file) }
        var directories: [String] = []
        var line = [CChar](repeating: 0, count: 4096)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard let slash = text.firstIndex(of: "/") else { continue }
            let path = String(text[slash...])
            guard !path.hasSuffix(" (deleted)") else { continue }
            directories.append(directory(of: path))
        }
        return directories
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let pointers = copies.map { UnsafePointer<CChar>($0) }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// The sandbox could not be applied; the host does not run the module without it.
struct ModuleHostSandboxError: Error, CustomStringConvertible {
    var what: String
    var errno: Int32
    var description: String { "cannot apply \(what): \(String(cString: strerror(errno)))" }
}
