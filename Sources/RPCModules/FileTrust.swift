#if canImport(Glibc)
import Glibc
#endif

/// Whether rpcd may trust a file it loads as code (a module) or as configuration (a handler file), in the
/// manner of OpenSSH's StrictModes.
///
/// The file and every directory above it must belong to root or to the user rpcd runs as, and be writable by
/// no one else: whoever could write to any of them could make rpcd run their code with its rights. A
/// directory others may write to is accepted only with the sticky bit (as `/tmp`), where they cannot rename or
/// remove entries that are not theirs. Both the path as written and the real path behind its symlinks are
/// checked. Pure checks on `stat` results; thread-safe.
enum FileTrust {
    /// Why `path`, whose metadata is `info` (read from the descriptor that will be used), cannot be trusted;
    /// nil if it can.
    static func problem(file path: String, info: stat) -> String? {
        guard info.st_mode & S_IFMT == S_IFREG else { return "not a regular file" }
        if let problem = ownershipProblem(info, what: path, sticky: false) { return problem }
        return problem(directoriesAbove: path)
    }

    /// Why one of the directories above `path` (as written, and after resolving symlinks) cannot be trusted.
    static func problem(directoriesAbove path: String) -> String? {
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

    /// `/a/b/c` → `/`, `/a`, `/a/b`. A relative path is taken from the working directory, as `open` does.
    private static func ancestors(of path: String) -> [String] {
        var absolute = path
        if !path.hasPrefix("/"), let cwd = getcwd(nil, 0) {
            absolute = String(cString: cwd) + "/" + path
            free(cwd)
        }
        let parts = absolute.split(separator: "/").dropLast()
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
