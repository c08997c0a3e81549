import RPCConfig

#if canImport(Glibc)
import Glibc
#endif

/// Where handlers keep their files across restarts (`StateDirectory=NAME`, as systemd's): `ROOT/NAME`, made by
/// rpcd with mode 0700 when missing, writable by the handler's module or program without a `ReadWritePaths=`
/// line, and handed to it (`host->state_directory`, `RPCModuleContext.stateDirectory`, `rpcd.start`'s
/// `stateDirectory`). An isolated handler's host user gets it through the ACL entry `ReadWritePaths=` gets
/// (`HostWalls`). The root is rpcd's own (`rpcd --state-dir`): `/var/lib/rpcd`, which the shipped unit's
/// `StateDirectory=rpcd` makes and gives to rpcd's user. Thread-safe; `make` does file I/O.
package enum StateDirectories {
    package static let standardRoot = "/var/lib/rpcd"

    /// Makes `path` (the root's `NAME`) if it is missing: mode 0700, owned by rpcd's user, and the root too
    /// (mode 0755, so that a host's user may search it) when it is missing. Throws the reason when `path` is not
    /// a directory rpcd's user owns: rpcd never hands over, or grants access to, what it does not own.
    static func make(_ path: String) throws(HostWallsProblem) {
        let root = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !root.isEmpty, mkdir(root, 0o755) == 0 {
            // Past rpcd's umask (the unit's 0007), which would leave the hosts' users unable to reach their own.
            chmod(root, 0o755)
        } else if !root.isEmpty, errno != EEXIST {
            throw HostWallsProblem("StateDirectory=: cannot make \(root): \(String(cString: strerror(errno)))")
        }
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw HostWallsProblem("StateDirectory=: cannot make \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw HostWallsProblem("StateDirectory=: cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else {
            throw HostWallsProblem("StateDirectory=: \(path) is not a directory rpcd's user (uid \(geteuid())) owns; remove it or give it to rpcd's user")
        }
    }
}
