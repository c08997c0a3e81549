import RPCCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The users module hosts run as, one per handler (`ModuleHostUsers`, RPCCore): never rpcd's user and never
/// an administrator, so a module that connects back to rpcd's socket is nobody the access rules know, and
/// rpcd's processes and files are another user's to it. Its group has the same number; it has no
/// supplementary groups. rpcd needs root, or `CAP_SETUID` and `CAP_SETGID` (which the shipped unit grants it
/// and every host is started without), to start a process as another user.
///
/// A handler keeps its id while rpcd runs, and gets the same one after a restart unless another handler took
/// it first: the id is a hash of the handler's name within the range, passing over ids that another handler
/// holds or that an account of the system has. Under systemd the id gets a name (`HostUserRecords`).
/// Thread-safe.
final class HostUsers: Sendable {
    private let assigned = Mutex<[String: UInt32]>([:])
    /// Where the ids get names; nil: they stay numbers.
    private let records: HostUserRecords?

    private init(records: HostUserRecords?) {
        self.records = records
    }

    /// Users of their own for hosts, if rpcd may start processes as other users; otherwise why not.
    static func detect(records: HostUserRecords? = nil) -> Result<HostUsers, HostWallsProblem> {
        guard geteuid() == 0 || hasCapabilities([setuidCapability, setgidCapability]) else {
            return .failure(HostWallsProblem("rpcd is not root and lacks CAP_SETUID and CAP_SETGID (rpcd.service grants them)"))
        }
        return .success(HostUsers(records: records))
    }

    /// The user (and group) id of handler `handler`'s hosts, named where `records` are written.
    func id(for handler: String) throws(HostWallsProblem) -> UInt32 {
        let id = try assigned.withLock { assigned throws(HostWallsProblem) -> UInt32 in
            if let id = assigned[handler] { return id }
            let taken = Set(assigned.values)
            let ids = ModuleHostUsers.ids
            let count = UInt32(ids.count)
            var offset = Self.hash(handler) % count
            for _ in 0..<count {
                let id = ids.lowerBound + offset
                if !taken.contains(id), !HostUserRecords.isAccount(id) {
                    assigned[handler] = id
                    return id
                }
                offset = (offset + 1) % count
            }
            throw HostWallsProblem(
                "no user id is free for its module host: handlers and accounts hold all of \(ids.lowerBound)–\(ids.upperBound)")
        }
        if let records {
            let result = records.write(id: id, handler: handler)
            guard result == 0 else {
                throw HostWallsProblem(
                    "cannot name its module host's user (uid \(id)) in \(records.directory): \(String(cString: strerror(result)))")
            }
        }
        return id
    }

    /// FNV-1a: stable across runs and builds, unlike Swift's seeded `hashValue`.
    private static func hash(_ text: String) -> UInt32 {
        text.utf8.reduce(2_166_136_261 as UInt32) { ($0 ^ UInt32($1)) &* 16_777_619 }
    }

    private static let setgidCapability = 6
    private static let setuidCapability = 7

    /// Whether every capability in `numbers` is in rpcd's effective set (`CapEff:` of /proc/self/status).
    private static func hasCapabilities(_ numbers: [Int]) -> Bool {
        guard let status = HostCgroupTree.read("/proc/self/status"),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let effective = UInt64(line.dropFirst("CapEff:".count).trimmingPrefix(while: { $0 == "\t" || $0 == " " }), radix: 16)
        else { return false }
        return numbers.allSatisfy { effective & (1 << UInt64($0)) != 0 }
    }
}
