import RPCModuleSDK
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the store could not be opened or saved; the description names the file.
struct KVStoreError: Error, CustomStringConvertible {
    let description: String
}

/// The values, behind a lock. With a file, every change is written (under the same lock, so the file always
/// holds the latest state) before it is acknowledged; a change that cannot be written is undone.
final class KVStore: Sendable {
    let file: String?
    private let values: Mutex<[String: JSONValue]>

    init(file: String?) throws {
        self.file = file
        values = Mutex(try file.map(Self.load) ?? [:])
    }

    var count: Int { values.withLock { $0.count } }

    func get(_ key: String) -> JSONValue? {
        values.withLock { $0[key] }
    }

    func keys() -> [String] {
        values.withLock { $0.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
    }

    func set(_ key: String, _ value: JSONValue) throws {
        try values.withLock { values in
            let previous = values.updateValue(value, forKey: key)
            do {
                try save(values)
            } catch {
                values[key] = previous
                throw error
            }
        }
    }

    /// Whether the key existed.
    func delete(_ key: String) throws -> Bool {
        try values.withLock { values in
            guard let previous = values.removeValue(forKey: key) else { return false }
            do {
                try save(values)
            } catch {
                values[key] = previous
                throw error
            }
            return true
        }
    }

    // MARK: - The file

    private static func load(_ path: String) throws -> [String: JSONValue] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            guard code == ENOENT else { throw KVStoreError(description: "cannot read \(path): \(reason(code))") }
            // A new store: make sure it can be created later rather than failing on the first set.
            let directory = directoryName(path)
            guard access(directory, W_OK) == 0 else {
                throw KVStoreError(description: "cannot create \(path): \(reason(errno)) (\(directory))")
            }
            return [:]
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw KVStoreError(description: "cannot read \(path): \(reason(errno))")
            }
            bytes += chunk[0..<count]
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw KVStoreError(description: "\(path) is not valid JSON: \(error)")
        }
        guard case .object(let values) = document else {
            throw KVStoreError(description: "\(path) does not hold a JSON object")
        }
        return values
    }

    /// Writes a temporary file next to the store, flushes it, and renames it over the store.
    private func save(_ values: [String: JSONValue]) throws {
        guard let file else { return }
        let text = Array((JSONValue.object(values).prettyPrinted() + "\n").utf8)
        var template = Array("\(file).XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw KVStoreError(description: "cannot write \(file): \(Self.reason(errno))") }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var written = 0
        var failure: Int32 = 0
        while written < text.count {
            let count = text[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            written += count
        }
        if failure == 0 && fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(temporary, file) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw KVStoreError(description: "cannot write \(file): \(Self.reason(failure))")
        }
        // Make the rename itself durable.
        let directory = open(Self.directoryName(file), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    private static func directoryName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
