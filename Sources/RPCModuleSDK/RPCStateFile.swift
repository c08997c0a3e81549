#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and replaces a module's files, typically beneath its state directory (`RPCModuleContext.stateDirectory`),
/// so that a module need not write its own file I/O. Blocking file I/O: call it from `init(context:)` or from a
/// method declared `mayBlock`, from any thread. Fails with `RPCStateFileError`, whose text names the file.
///
/// Every write replaces the file atomically, the recipe docs/MODULES.md ("Files a module keeps") describes: the
/// bytes go to a temporary file in the same directory, which is flushed to disk (`fsync`) and renamed over the
/// old file, and the directory is flushed too. A reader, or a crash at any moment, sees the old file or the new
/// one, never a part of either. Concurrent writers of one file must take turns (a lock of the module's own).
///
///     let file = context.stateDirectory! + "/notes.json"
///     var notes = try RPCStateFile.read([String: String].self, from: file) ?? [:]
///     notes["todo"] = "write the docs"
///     try RPCStateFile.write(notes, to: file)
public enum RPCStateFile {
    /// The file's bytes; nil when it does not exist.
    public static func readBytes(_ path: String) throws(RPCStateFileError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw RPCStateFileError(path: path, "cannot read", errno: errno)
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { readSome(descriptor, $0) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw RPCStateFileError(path: path, "cannot read", errno: errno)
            }
            bytes += chunk[0..<count]
        }
    }

    /// Replaces the file with `bytes` atomically (see the type), creating it with mode 0600 when it is new.
    public static func writeBytes(_ bytes: [UInt8], to path: String) throws(RPCStateFileError) {
        var template = Array("\(path).XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw RPCStateFileError(path: path, "cannot write", errno: errno) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var written = 0
        var failure: Int32 = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { writeSome(descriptor, $0) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            written += count
        }
        if failure == 0 && fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw RPCStateFileError(path: path, "cannot write", errno: failure)
        }
        // Make the rename itself durable.
        let directory = open(directoryName(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    /// The file's JSON document; nil when it does not exist.
    public static func readJSON(_ path: String) throws(RPCStateFileError) -> JSONValue? {
        guard let bytes = try readBytes(path) else { return nil }
        do {
            return try JSONValue(parsing: bytes)
        } catch {
            throw RPCStateFileError(path: path, "\(path) is not valid JSON: \(error)")
        }
    }

    /// Replaces the file with `value`, pretty-printed, atomically.
    public static func writeJSON(_ value: JSONValue, to path: String) throws(RPCStateFileError) {
        try writeBytes(Array((value.prettyPrinted() + "\n").utf8), to: path)
    }

    /// The file's JSON document decoded as `type` (as `JSONDecoder` would); nil when the file does not exist.
    public static func read<T: Decodable>(_ type: T.Type, from path: String) throws(RPCStateFileError) -> T? {
        guard let document = try readJSON(path) else { return nil }
        do {
            return try JSONValueDecoder().decode(type, from: document)
        } catch {
            throw RPCStateFileError(path: path, "\(path) does not hold a \(type): \(error)")
        }
    }

    /// Replaces the file with `value` encoded as JSON (as `JSONEncoder` would), atomically.
    public static func write<T: Encodable>(_ value: T, to path: String) throws(RPCStateFileError) {
        let document: JSONValue
        do {
            document = try JSONValueEncoder().encode(value)
        } catch {
            throw RPCStateFileError(path: path, "cannot write \(path): \(error)")
        }
        try writeJSON(document, to: path)
    }

    static func directoryName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

// Outside `RPCStateFile`, whose `read` and `write` hide the system calls of the same names.
private func readSome(_ descriptor: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
    read(descriptor, buffer.baseAddress, buffer.count)
}

private func writeSome(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) -> Int {
    write(descriptor, buffer.baseAddress, buffer.count)
}

/// Why `RPCStateFile` could not read or write a file: `description` names the file and the reason
/// ("cannot write /var/lib/rpcd/notes/notes.json: Permission denied"), fit for an `init` error or a log field.
public struct RPCStateFileError: Error, CustomStringConvertible, Sendable {
    /// The file.
    public let path: String
    /// The error number, when a system call failed; nil for a document that is not what was asked for.
    public let errno: Int32?
    public let description: String

    init(path: String, _ description: String) {
        self.path = path
        self.errno = nil
        self.description = description
    }

    init(path: String, _ what: String, errno code: Int32) {
        self.path = path
        self.errno = code
        self.description = "\(what) \(path): \(String(cString: strerror(code)))"
    }
}
