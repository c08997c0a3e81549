#if canImport(Glibc)
package import Glibc
#endif

/// Whether rpcd may trust a file it loads as code (a module) or as configuration (a handler file), in the
/// manner of OpenSSH's StrictModes.
///
/// The file and every directory above it must belong to root or to the user rpcd runs as, and be writable by
/// no one else: whoever could write to any of them could make rpcd run their code with its rights. A
/// directory others may write to is accepted only with the sticky bit (as `/tmp`), where they cannot rename or
/// remove entries that are not theirs. Both the path as written and the real path behind its symlinks are
/// checked, and so is every symlink on the way: whoever owns a link chooses what it points to, so in a
/// directory others may write (sticky or not) a link is trusted by its own owner, never by its target's
/// (a user's `leak.conf -> /etc/shadow` is refused before a byte of it is read). Pure checks on `lstat` and
/// `stat` results; thread-safe.
package enum FileTrust {
    /// Why `path`, whose metadata is `info` (read from the descriptor that will be used), cannot be trusted;
    /// nil if it can.
    package static func problem(file path: String, info: stat) -> String? {
        guard info.st_mode & S_IFMT == S_IFREG else { return "not a regular file" }
        if let problem = ownershipProblem(info, what: path, sticky: false) { return problem }
        return problem(directoriesAbove: path)
    }

    /// Why one of the directories above `path` (as written, and after resolving symlinks), or a symlink on
    /// the way to it (`path` itself included), cannot be trusted.
    package static func problem(directoriesAbove path: String) -> String? {
        if let problem = problem(linksOn: path) { return problem }
        var chains = [ancestors(of: path)]
        if let real = realpath(path, nil) {
            chains.append(ancestors(of: String(cString: real)))
            free(real)
        }
        for directory in chains.joined() {
            var info = stat()
            guard stat(directory, &info) == 0 else { return "\(directory): \(String(cString: strerror(errno)))" }
            if let problem = ownershipProblem(info, what: directory, sticky: true) { return problem }
        }
        return nil
    }

    /// Why a symlink met on the way to `path`, following each link as the kernel would, cannot be trusted: one
    /// whose owner is not root or rpcd's user.
    private static func problem(linksOn path: String) -> String? {
        var pending = [path]
        var followed = 0
        while let next = pending.popLast() {
            for candidate in ancestors(of: next).dropFirst() + [absolute(next)] {
                var info = stat()
                guard lstat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { continue }
                guard info.st_uid == 0 || info.st_uid == geteuid() else {
                    return "\(candidate) is a symlink owned by uid \(info.st_uid), not by root or by the user rpcd runs as (uid \(geteuid())): whoever owns a link chooses where it points"
                }
                // A trusted link's target is checked in turn (as a path of its own), up to the kernel's limit.
                followed += 1
                guard followed <= 40 else { return "\(path): too many levels of symbolic links" }
                var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let length = readlink(candidate, &target, target.count - 1)
                guard length > 0 else { continue }
                let text = String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                pending.append(text.hasPrefix("/") ? text : directory(of: candidate) + "/" + text)
            }
        }
        return nil
    }

    private static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/"), let cwd = getcwd(nil, 0) else { return path }
        defer { free(cwd) }
        return String(cString: cwd) + "/" + path
    }

    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// `/a/b/c` → `/`, `/a`, `/a/b`. A relative path is taken from the working directory, as `open` does.
    private static func ancestors(of path: String) -> [String] {
        let parts = absolute(path).split(separator: "/").dropLast()
        return ["/"] + parts.indices.map { "/" + parts[...$0].joined(separator: "/") }
    }

    private static func ownershipProblem(_ info: stat, what: String, sticky allowed: Bool) -> String? {
        let owner = info.st_uid
        guard owner == 0 || owner == geteuid() else {
            return "\(what) belongs to uid \(owner), not to root or to the user rpcd runs as (uid \(geteuid()))"
        }
        let writableByOthers = info.st_mode & (S_IWGRP | S_IWOTH) != 0
        let stickyDirectory = allowed && info.st_mode & S_IFMT == S_IFDIR && info.st_mode & S_ISVTX != 0
        guard !writableByOthers || stickyDirectory else {
            return "\(what) is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))): only its owner may be able to change what rpcd loads"
        }
        return nil
    }
}
