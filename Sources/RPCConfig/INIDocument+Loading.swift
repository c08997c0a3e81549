#if canImport(Glibc)
package import Glibc
#endif

extension INIDocument {
    /// Reads and parses one file.
    ///
    /// A file that is a symlink to /dev/null (masked) or empty yields a document without entries.
    /// Throws naming the path when the file does not exist, is not a regular file, cannot be read
    /// or is not UTF-8, and naming file and line for syntax errors.
    package static func load(path: String) throws(ConfigError) -> INIDocument {
        switch try ConfigFiles.kind(of: path) {
        case .masked:
            return INIDocument(file: path, entries: [])
        case .regular:
            return try parse(ConfigFiles.readText(path), file: path)
        case .missing:
            throw ConfigError(file: path, line: nil, message: "configuration file not found")
        case .directory:
            throw ConfigError(file: path, line: nil, message: "is a directory; expected a configuration file")
        case .other:
            throw ConfigError(file: path, line: nil, message: "is not a regular file")
        }
    }

    /// Reads and parses one file through one descriptor, after `check` has judged the file by what `fstat`
    /// says of that descriptor: a path swapped after the check (a symlink in a sticky directory) changes
    /// nothing, because what is read is what was checked. A masked file (the /dev/null device) is empty; any
    /// other file that is not regular is refused, and nothing is opened in a way that could block (a FIFO).
    package static func load(path: String, check: (stat) throws(ConfigError) -> Void) throws(ConfigError) -> INIDocument {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let error = errno
            if error == ENOENT { throw ConfigError(file: path, line: nil, message: "configuration file not found") }
            throw ConfigError(file: path, line: nil, message: "cannot open file: \(String(cString: strerror(error)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw ConfigError(file: path, line: nil, message: "cannot read file: \(String(cString: strerror(errno)))")
        }
        try check(info)
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            return try parse(ConfigFiles.readText(descriptor: fd, path: path), file: path)
        case S_IFCHR where isNullDevice(info):
            return INIDocument(file: path, entries: [])
        case S_IFDIR:
            throw ConfigError(file: path, line: nil, message: "is a directory; expected a configuration file")
        default:
            throw ConfigError(file: path, line: nil, message: "is not a regular file")
        }
    }

    /// Whether `info` is that of /dev/null (a mask), by device number.
    private static func isNullDevice(_ info: stat) -> Bool {
        var null = stat()
        return stat("/dev/null", &null) == 0 && null.st_rdev == info.st_rdev
    }

    /// Reads a main file and its drop-ins, in the order their assignments apply.
    ///
    /// The main file comes first, then every `*.conf` in `PATH.d/` (for `/etc/rpcd/rpcd.conf`, the
    /// directory `/etc/rpcd/rpcd.conf.d/`) in lexical (byte) order of file name, so `10-a.conf`
    /// applies before `20-b.conf` and later assignments win. A missing main file is an error; a
    /// missing `.d` directory is not. Drop-ins that are empty or symlinks to /dev/null are empty.
    package static func loadWithDropIns(main path: String) throws(ConfigError) -> [INIDocument] {
        var documents = [try load(path: path)]
        for file in try dropInFiles(in: [path + ".d"]) {
            documents.append(try load(path: file))
        }
        return documents
    }

    /// The drop-in files of a set of directories, with systemd's precedence, in application order.
    ///
    /// Every non-hidden entry whose name ends in `suffix` counts, except directories. When several
    /// directories hold a file of the same name, only the one in the earliest directory is used,
    /// so listing `["/etc/x.d", "/usr/lib/x.d"]` lets `/etc/x.d/foo.conf` replace the packaged
    /// `foo.conf`, and a symlink from it to /dev/null masks it. The result is sorted by file name
    /// (bytewise, like strcmp), regardless of directory. Missing directories are skipped; a path
    /// that exists but is not a directory, or cannot be listed, is an error naming it.
    package static func dropInFiles(in directories: [String], suffix: String = ".conf") throws(ConfigError) -> [String] {
        var chosen: [String: String] = [:]  // file name -> full path, first directory wins
        for directory in directories {
            switch try ConfigFiles.kind(of: directory) {
            case .missing:
                continue
            case .directory:
                break
            case .regular, .masked, .other:
                throw ConfigError(file: directory, line: nil, message: "is not a directory; drop-ins belong in a directory of *\(suffix) files")
            }
            for name in try ConfigFiles.listDirectory(directory)
            where name.hasSuffix(suffix) && !name.hasPrefix(".") && chosen[name] == nil {
                let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
                // A subdirectory named like a drop-in is not one; systemd skips it too.
                if try ConfigFiles.kind(of: path) == .directory { continue }
                chosen[name] = path
            }
        }
        return chosen.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map(\.value)
    }
}
