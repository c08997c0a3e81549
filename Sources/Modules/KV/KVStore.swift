import RPCExampleInterfaces
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

/// The store is bounded: a client must not be able to grow it (and the file rewritten on every change) without
/// limit. What a `set` past a bound answers, error 2 `StoreFull` with the limit's name and value.
struct KVLimits: Sendable {
    /// `[Config] MaxKeys=`: keys at most.
    var maxKeys = 10_000
    /// `[Config] MaxBytes=`: the keys and the values' JSON text together, in bytes, at most.
    var maxBytes = 1 << 20

    static func full(_ limit: String, _ value: Int) -> StoreFull {
        StoreFull(limit: limit, value: value)
    }
}

/// The values, behind a lock. With a file, every change is written (under the same lock, so the file always
/// holds the latest state) before it is acknowledged; a change that cannot be written is undone.
final class KVStore: Sendable {
    let file: String?
    let limits: KVLimits
    private let values: Mutex<(entries: [String: JSONValue], bytes: Int)>

    init(file: String?, limits: KVLimits = KVLimits()) throws {
        self.file = file
        self.limits = limits
        let loaded = try file.map(Self.load) ?? [:]
        values = Mutex((loaded, loaded.reduce(0) { $0 + Self.size($1.key, $1.value) }))
    }

    /// What an entry counts against `MaxBytes=`.
    private static func size(_ key: String, _ value: JSONValue) -> Int {
        key.utf8.count + value.serialized().count
    }

    var count: Int { values.withLock { $0.entries.count } }

    func get(_ key: String) -> JSONValue? {
        values.withLock { $0.entries[key] }
    }

    func keys() -> [String] {
        values.withLock { $0.entries.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
    }

    /// Stores `value`; past a limit, throws "Store full" and changes nothing. `changed` runs under the store's
    /// lock once the change is made, so what it reports (`kv.changed`) comes in the order the changes were made.
    func set(_ key: String, _ value: JSONValue, changed: () -> Void = {}) throws {
        try values.withLock { store in
            let previous = store.entries[key]
            let bytes = store.bytes - (previous.map { Self.size(key, $0) } ?? 0) + Self.size(key, value)
            if previous == nil, store.entries.count >= limits.maxKeys { throw KVLimits.full("MaxKeys", limits.maxKeys) }
            if bytes > limits.maxBytes { throw KVLimits.full("MaxBytes", limits.maxBytes) }
            store.entries[key] = value
            do {
                try save(store.entries)
            } catch {
                store.entries[key] = previous
                throw error
            }
            store.bytes = bytes
            changed()
        }
    }

    /// Whether the key existed; `changed` runs as for `set`, when it did.
    func delete(_ key: String, changed: () -> Void = {}) throws -> Bool {
        try values.withLock { store in
            guard let previous = store.entries.removeValue(forKey: key) else { return false }
            do {
                try save(store.entries)
            } catch {
                store.entries[key] = previous
                throw error
            }
            store.bytes -= Self.size(key, previous)
            changed()
            return true
        }
    }

    // MARK: - The file

    private static func load(_ path: String) throws -> [String: JSONValue] {
        guard let document = try RPCStateFile.readJSON(path) else {
            // A new store: make sure it can be created later rather than failing on the first set.
            let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "."
            guard access(directory, W_OK) == 0 else {
                throw KVStoreError(description: "cannot create \(path): \(reason(errno)) (\(directory))")
            }
            return [:]
        }
        guard case .object(let values) = document else {
            throw KVStoreError(description: "\(path) does not hold a JSON object")
        }
        return values
    }

    /// Replaces the file atomically (`RPCStateFile`).
    private func save(_ values: [String: JSONValue]) throws {
        guard let file else { return }
        try RPCStateFile.writeJSON(.object(values), to: file)
    }

    private static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
