import CRPCDHostSupport
package import Logging
import RPCLogging

#if canImport(Glibc)
import Glibc
import RPCModuleHost
#endif

/// What rpcd puts around each module host beyond the sandbox the host applies to itself (docs/SECURITY.md,
/// "Module sandbox"), decided once at start-up and logged once: a user of its own per handler (`HostUsers`),
/// and a cgroup of its own where rpcd has a delegated one (`HostCgroupTree`), so that `MemoryMax=` and
/// `TasksMax=` bound the host with every process it starts and the host ends with all of them. What the system
/// does not offer is said in the log, never assumed. Thread-safe.
package final class HostWalls: Sendable {
    let users: HostUsers?
    let cgroups: HostCgroupTree?
    /// Whether a host's state directory is made and its user given it and its `ReadWritePaths=` (not for a
    /// check, which changes nothing).
    let grantsPaths: Bool

    init(users: HostUsers?, cgroups: HostCgroupTree?, grantsPaths: Bool = true) {
        self.users = users
        self.cgroups = cgroups
        self.grantsPaths = grantsPaths
    }

    /// No walls beyond the process (tests that start hosts by hand).
    package static let processOnly = HostWalls(users: nil, cgroups: nil)

    /// For `rpcd --check-config`, which loads each module in a host as its handler's would run: as the host's
    /// user, where rpcd may start one, and nothing else (no cgroup, no change to any file, nothing logged).
    package static func checking() -> HostWalls {
        HostWalls(users: try? HostUsers.detect().get(), cgroups: nil, grantsPaths: false)
    }

    /// Takes what the system offers, and logs what it does not.
    package static func detect(logger: Logger) -> HostWalls {
        let users: HostUsers?
        switch HostUsers.detect(records: HostUserRecords.underSystemd()) {
        case .success(let found):
            users = found
        case .failure(let problem):
            logger.warning(
                "Module hosts run as rpcd's own user: a module may call rpcd as rpcd's user, and read what rpcd's user may read",
                metadata: [LogField.reason: "\(problem)"])
            users = nil
        }
        switch HostCgroupTree.takeOver() {
        case .success(let tree):
            var missing: [String] = []
            if !tree.controllers.contains("memory") { missing.append("MemoryMax= limits each process's data (no memory controller)") }
            if !tree.controllers.contains("pids") {
                missing.append(users == nil ? "TasksMax= is not enforced (no pids controller)" : "TasksMax= counts the host's user's processes (no pids controller)")
            }
            let metadata: Logger.Metadata = [LogField.cgroup: "\(tree.path)"]
            if missing.isEmpty {
                logger.info("Module hosts run in cgroups of their own", metadata: metadata)
            } else {
                logger.warning("Module hosts run in cgroups of their own, but \(missing.joined(separator: "; "))", metadata: metadata)
            }
            return HostWalls(users: users, cgroups: tree)
        case .failure(let problem):
            logger.warning(
                "Module hosts have no cgroups of their own: MemoryMax= limits each process's data, \(users == nil ? "TasksMax= is not enforced" : "TasksMax= counts the host's user's processes"), and a host's children are ended through its process group",
                metadata: [LogField.reason: "\(problem)"])
            return HostWalls(users: users, cgroups: nil)
        }
    }

    /// The walls of one host of `handler` about to start; `spawned(_:)` after the spawn.
    func prepare(handler: String, sandbox: HandlerSandbox) throws(HostWallsProblem) -> PreparedHostWalls {
        var walls = ModuleHostWalls()
        if grantsPaths, let state = sandbox.stateDirectory { try StateDirectories.make(state) }
        if let users {
            let id = try users.id(for: handler)
            walls.uid = id
            walls.gid = id
            // Without a pids controller, the user's process count is what bounds the host's tasks: the user is
            // the host's alone (two only while a reload replaces it).
            if cgroups?.controllers.contains("pids") != true { walls.maxTasks = sandbox.tasksMax }
            for path in sandbox.writablePaths where grantsPaths && access(path, F_OK) == 0 {
                let result = rpcd_acl_grant_user(path, id)
                guard result == 0 else {
                    let key = path == sandbox.stateDirectory ? "StateDirectory=" : "ReadWritePaths="
                    throw HostWallsProblem(
                        "\(key)\(path): cannot give the module host's user (uid \(id)) access to it (an ACL entry; rpcd's user must own it): \(String(cString: strerror(-result)))")
                }
            }
        }
        var cgroup: HostCgroup?
        if let cgroups {
            let made = try cgroups.makeCgroup(handler: handler, memoryMax: sandbox.memoryMax, tasksMax: sandbox.tasksMax)
            do {
                walls.cgroupProcs = try made.openProcs()
            } catch {
                _ = made.remove()
                throw error
            }
            cgroup = made
        }
        return PreparedHostWalls(walls: walls, cgroup: cgroup)
    }
}

/// One host's walls: what its spawn takes, and its cgroup for the rest of its life.
struct PreparedHostWalls: Sendable {
    var walls: ModuleHostWalls
    var cgroup: HostCgroup?

    /// Closes what only the spawn needed; on a failed spawn, removes the cgroup too.
    func spawned(_ succeeded: Bool) {
        if let procs = walls.cgroupProcs { close(procs) }
        if !succeeded { _ = cgroup?.remove() }
    }
}
