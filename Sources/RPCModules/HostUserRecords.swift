import RPCJSON

#if canImport(Glibc)
import Glibc
#endif

/// Names for the module hosts' users: JSON user and group records in systemd's userdb drop-in directory
/// (nss-systemd(8), "Static drop-in JSON user/group records"), so that every NSS lookup — `id`, `ls -l`, a
/// Python program's `getpass.getuser()`, and D-Bus, which refuses a caller whose uid has no name — knows a
/// host's user as `rpcd-HANDLER`, as systemd names a `DynamicUser=` unit's.
///
/// Written only where systemd runs rpcd (`INVOCATION_ID` is set) and the directory is rpcd's to write: the
/// shipped unit lets rpcd's user write `/run/userdb` (tmpfiles gives it an ACL entry), and nothing else does,
/// so a test or a hand-started rpcd never changes the machine's user database. The records live in /run: they
/// go with a reboot, and rpcd rewrites a handler's when it next starts its host.
struct HostUserRecords: Sendable {
    let directory: String
    /// A record's `realName` (`pw_gecos`): how rpcd knows its own records from an account's.
    static let realName = "rpcd module host"

    /// The records under systemd's userdb drop-in directory, where rpcd may write them; nil elsewhere.
    static func underSystemd(directory: String = "/run/userdb") -> HostUserRecords? {
        guard getenv("INVOCATION_ID") != nil, access(directory, W_OK) == 0 else { return nil }
        return HostUserRecords(directory: directory)
    }

    /// Whether `id` has a name that is not one of rpcd's records: an account, which a host must not share.
    static func isAccount(_ id: UInt32) -> Bool {
        if let user = getpwuid(id) {
            return user.pointee.pw_gecos.map { String(cString: $0) } != realName
        }
        return getgrgid(id) != nil
    }

    /// The name of handler `handler`'s host user: `rpcd-HANDLER` where that is a user name systemd accepts
    /// (letters, digits, `_`, `-`, at most 31 characters), else `rpcd-host-ID`.
    static func userName(handler: String, id: UInt32) -> String {
        let name = "rpcd-" + handler
        let valid = name.count <= 31 && name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-")
        }
        return valid ? name : "rpcd-host-\(id)"
    }

    /// Writes the user and group records of `id` for `handler` (`NAME.user`, `NAME.group`, and the `ID.user`,
    /// `ID.group` links nss-systemd finds them by). Returns an errno value of the first step that failed, or 0.
    func write(id: UInt32, handler: String) -> Int32 {
        let name = Self.userName(handler: handler, id: id)
        let user: JSONValue = [
            "userName": .string(name), "uid": .number(Int(id)), "gid": .number(Int(id)), "realName": .string(Self.realName),
            "homeDirectory": "/", "shell": "/usr/sbin/nologin", "locked": true, "disposition": "dynamic",
        ]
        let group: JSONValue = [
            "groupName": .string(name), "gid": .number(Int(id)), "description": .string(Self.realName), "disposition": "dynamic",
        ]
        for (record, suffix) in [(user, "user"), (group, "group")] {
            let result = replace("\(directory)/\(name).\(suffix)", with: record.serialized())
            guard result == 0 else { return result }
            let link = "\(directory)/\(id).\(suffix)"
            let temporary = link + ".new"
            unlink(temporary)
            guard symlink("\(name).\(suffix)", temporary) == 0, rename(temporary, link) == 0 else { return errno }
        }
        return 0
    }

    /// Writes `bytes` to `path` whole (a new file renamed over it), readable by everyone: every process reads it.
    private func replace(_ path: String, with bytes: [UInt8]) -> Int32 {
        let temporary = path + ".new"
        let file = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard file >= 0 else { return errno }
        defer { close(file) }
        let written = bytes.withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
        guard written == bytes.count, fchmod(file, 0o644) == 0, rename(temporary, path) == 0 else {
            let error = errno
            unlink(temporary)
            return error == 0 ? EIO : error
        }
        return 0
    }
}
