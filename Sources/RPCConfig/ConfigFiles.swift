#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few file-system operations configuration loading needs, with errors phrased for
/// administrators. POSIX calls rather than Foundation so that every failure can name its errno.
enum ConfigFiles {
    enum Kind: Equatable {
        case missing
        /// A symlink to /dev/null (or /dev/null itself): systemd's way of masking a file.
        case masked
        case regular
        case directory
        case other
    }

    /// What is at `path`, following symbolic links. A dangling symlink is `.missing`.
    static func kind(of path: String) throws(ConfigError) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return .missing }
            throw ConfigError(file: path, line: nil, message: "cannot examine file: \(describe(code))")
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        case S_IFCHR where resolvesToDevNull(path): return .masked
        default: return .other
        }
    }

    /// The text of a regular file or of a masked file (which reads as empty).
    /// Fails naming the file for unreadable files and text that is not UTF-8 (naming the line).
    static func readText(_ path: String) throws(ConfigError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ConfigError(file: path, line: nil, message: "cannot open file: \(describe(errno))")
        }
        defer { close(fd) }
        return try readText(descriptor: fd, path: path)
    }

    /// The text read from `fd` (open on `path`, which errors name).
    static func readText(descriptor fd: Int32, path: String) throws(ConfigError) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw ConfigError(file: path, line: nil, message: "cannot read file: \(describe(errno))")
            }
            bytes.append(contentsOf: buffer[..<count])
        }
        if let badLine = firstLineWithInvalidUTF8(bytes) {
            throw ConfigError(file: path, line: badLine, message: "the file is not valid UTF-8 text")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The names of the entries of a directory, unsorted, without `.` and `..`.
    static func listDirectory(_ path: String) throws(ConfigError) -> [String] {
        guard let dir = opendir(path) else {
            throw ConfigError(file: path, line: nil, message: "cannot list directory: \(describe(errno))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private static func resolvesToDevNull(_ path: String) -> Bool {
        guard let resolved = realpath(path, nil) else { return false }
        defer { free(resolved) }
        return String(cString: resolved) == "/dev/null"
    }

    private static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// The 1-based line holding the first byte sequence that is not UTF-8, or nil if all is well.
    private static func firstLineWithInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var line = 1
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): if scalar == "\n" { line += 1 }
            case .emptyInput: return nil
            case .error: return line
            }
        }
    }
}
