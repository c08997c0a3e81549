import CRPCDHostSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The cgroup v2 subtree rpcd runs module hosts in, where it has one: its own cgroup, delegated to it by
/// systemd (`Delegate=yes` in rpcd.service; systemd marks such a cgroup with the `trusted.delegate` or
/// `user.delegate` attribute and gives it to the unit's user). rpcd moves itself into `daemon/` beneath it (a
/// cgroup whose controllers reach its children may hold no process itself), enables the memory and pids
/// controllers for its children where the kernel offers them, and starts each host in a `host-HANDLER-N/` of
/// its own (`HostCgroup`). Outside such a cgroup (no systemd, an unprivileged `make check`, a unit without
/// `Delegate=`) there is none, and `HostWalls` says so once. Thread-safe.
package final class HostCgroupTree: Sendable {
    /// rpcd's cgroup, in the cgroup2 mount (`/sys/fs/cgroup/system.slice/rpcd.service`).
    let path: String
    /// The controllers enabled for hosts: `memory`, `pids`, or fewer.
    let controllers: Set<String>
    private let count = Atomic<Int>(0)

    private init(path: String, controllers: Set<String>) {
        self.path = path
        self.controllers = controllers
    }

    /// Takes over rpcd's own cgroup if it is delegated to it; otherwise why not, for the log.
    package static func takeOver() -> Result<HostCgroupTree, HostWallsProblem> {
        guard let mount = cgroup2Mount() else { return .failure(.init("no cgroup v2 hierarchy is mounted")) }
        guard let own = ownCgroup() else { return .failure(.init("/proc/self/cgroup names no cgroup v2 group")) }
        let path = own == "/" ? mount : mount + own
        guard isDelegated(path) else {
            return .failure(.init("rpcd's cgroup \(path) is not delegated to it (rpcd.service has Delegate=yes; outside systemd there is no such cgroup)"))
        }
        let daemon = path + "/daemon"
        guard mkdir(daemon, 0o755) == 0 || errno == EEXIST else { return .failure(.init(daemon, errno)) }
        guard write("\(getpid())", to: daemon + "/cgroup.procs") == 0 else { return .failure(.init(daemon + "/cgroup.procs", errno)) }
        // What an earlier rpcd of this unit left (it was killed): its hosts end now.
        for leftover in children(of: path) where leftover.hasPrefix("host-") {
            HostCgroup(path: path + "/" + leftover).kill()
            _ = rmdir(path + "/" + leftover)
        }
        let available = Set((read(path + "/cgroup.controllers") ?? "").split(separator: " ").map(String.init))
        var enabled = Set<String>()
        for controller in ["memory", "pids"] where available.contains(controller) {
            if write("+\(controller)", to: path + "/cgroup.subtree_control") == 0 { enabled.insert(controller) }
        }
        return .success(HostCgroupTree(path: path, controllers: enabled))
    }

    /// A new cgroup for a host of handler `handler`, with its limits; nil for a limit means none.
    func makeCgroup(handler: String, memoryMax: Int?, tasksMax: Int?) throws(HostWallsProblem) -> HostCgroup {
        let number = count.add(1, ordering: .relaxed).newValue
        let cgroup = HostCgroup(path: "\(path)/host-\(handler)-\(number)")
        guard mkdir(cgroup.path, 0o755) == 0 else { throw HostWallsProblem(cgroup.path, errno) }
        var settings: [(String, String)] = []
        if controllers.contains("memory") {
            settings.append(("memory.max", memoryMax.map(String.init) ?? "max"))
            // What MemoryMax= bounds is memory, not memory plus swap.
            if access(cgroup.path + "/memory.swap.max", F_OK) == 0 { settings.append(("memory.swap.max", memoryMax == nil ? "max" : "0")) }
        }
        if controllers.contains("pids") { settings.append(("pids.max", tasksMax.map(String.init) ?? "max")) }
        for (file, value) in settings where Self.write(value, to: "\(cgroup.path)/\(file)") != 0 {
            let problem = HostWallsProblem("\(cgroup.path)/\(file)", errno)
            _ = rmdir(cgroup.path)
            throw problem
        }
        return cgroup
    }

    // MARK: Reading the system's cgroup files

    /// Where the cgroup2 hierarchy's root is mounted: `/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a
    /// hybrid system. The last such mount wins: a later one covers an earlier (a container's, systemd's
    /// read-only `ProtectControlGroups=` one, beneath which the unit's own cgroup is bound writable).
    private static func cgroup2Mount() -> String? {
        guard let mountinfo = read("/proc/self/mountinfo") else { return nil }
        var found: String?
        for line in mountinfo.split(separator: "\n") {
            let halves = line.split(separator: " - ", maxSplits: 1)
            guard halves.count == 2, halves[1].hasPrefix("cgroup2 ") else { continue }
            let fields = halves[0].split(separator: " ")
            if fields.count > 4, fields[3] == "/" { found = String(fields[4]) }
        }
        return found
    }

    /// rpcd's cgroup v2 path (`0::PATH` in /proc/self/cgroup).
    private static func ownCgroup() -> String? {
        guard let text = read("/proc/self/cgroup") else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) }
    }

    /// Delegated by systemd: it sets an extended attribute (`trusted.` for root's units, `user.` too since
    /// systemd 251), and gives the cgroup to the unit's user, which is how a non-root rpcd tells.
    private static func isDelegated(_ path: String) -> Bool {
        if rpcd_cgroup_is_delegated(path) != 0 { return true }
        var info = stat()
        return geteuid() != 0 && stat(path, &info) == 0 && info.st_uid == geteuid() && access(path + "/cgroup.procs", W_OK) == 0
    }

    private static func children(of path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if entry.pointee.d_type == DT_DIR, name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            guard count > 0 else { break }
            bytes += chunk.prefix(count)
        }
        return String(decoding: bytes, as: UTF8.self).trimmingTrailingNewline
    }

    /// Writes `value` to a cgroup file in one `write`; 0, or -1 with `errno` set.
    static func write(_ value: String, to path: String) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return -1 }
        defer { close(descriptor) }
        let written = value.withCString { Glibc.write(descriptor, $0, strlen($0)) }
        return written == value.utf8.count ? 0 : -1
    }
}

/// One module host's cgroup: everything the host starts runs in it, and ends with it.
struct HostCgroup: Sendable {
    let path: String

    /// Its `cgroup.procs`, opened for the host's spawn (the host moves itself in before it execs); the caller
    /// closes it.
    func openProcs() throws(HostWallsProblem) -> Int32 {
        let descriptor = open(path + "/cgroup.procs", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw HostWallsProblem(path + "/cgroup.procs", errno) }
        return descriptor
    }

    /// SIGKILL to every process in it (`cgroup.kill`, Linux 5.14; before it, each pid of `cgroup.procs`).
    func kill() {
        if HostCgroupTree.write("1", to: path + "/cgroup.kill") == 0 { return }
        for pid in (HostCgroupTree.read(path + "/cgroup.procs") ?? "").split(separator: "\n").compactMap({ pid_t($0) }) {
            _ = Glibc.kill(pid, SIGKILL)
        }
    }

    /// Removes it once its last process has been reaped; false while it still has one.
    func remove() -> Bool {
        rmdir(path) == 0 || errno == ENOENT
    }
}

/// Why rpcd has no cgroup for its hosts, or could not make one.
package struct HostWallsProblem: Error, CustomStringConvertible {
    package var description: String

    init(_ description: String) {
        self.description = description
    }

    init(_ path: String, _ errno: Int32) {
        description = "\(path): \(String(cString: strerror(errno)))"
    }
}

extension String {
    fileprivate var trimmingTrailingNewline: String {
        hasSuffix("\n") ? String(dropLast()) : self
    }
}
