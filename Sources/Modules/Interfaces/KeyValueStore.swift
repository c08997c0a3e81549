public import RPCMacros

/// Stores JSON values under string keys, optionally persisted to a file.
///
/// The interface of the example module `kv` (Sources/Modules/KV), declared once for the module and its
/// clients.
@RPCInterface(service: "kv", events: [KeyValueStoreEvents.changed])
public protocol KeyValueStore: Sendable {
    /// Returns the value stored under key; error 1 when there is none.
    @RPCMethod(result: "value", readOnly: true, errors: [NoSuchKey.self])
    func get(key: String) async throws -> JSONValue

    /// Stores value (any JSON value) under key, replacing what was there; returns true. Error 2 when the store is full.
    @RPCMethod(result: "stored", mayBlock: true, errors: [StoreFull.self])
    func set(key: String, value: JSONValue) async throws -> Bool

    /// Removes key; returns whether it existed.
    @RPCMethod(result: "existed", mayBlock: true)
    func delete(key: String) async throws -> Bool

    /// Returns every key, sorted.
    @RPCMethod(result: "keys", readOnly: true)
    func list() async throws -> [String]
}

/// kv's error 1: `get` of a key the store does not have.
public struct NoSuchKey: RPCDocumentedError, Hashable {
    public static let code = 1
    public static let message = "No such key"
    public var key: String

    public init(key: String) {
        self.key = key
    }
}

/// kv's error 2: a `set` that would pass a bound of the store (nothing was changed). `limit` is "MaxKeys" or
/// "MaxBytes", `value` the bound.
public struct StoreFull: RPCDocumentedError, Hashable {
    public static let code = 2
    public static let message = "Store full"
    public var limit: String
    public var value: Int

    public init(limit: String, value: Int) {
        self.limit = limit
        self.value = value
    }
}

/// The events kv emits, declared with its interface (they are part of its fingerprint).
public enum KeyValueStoreEvents {
    /// `kv.changed`: `{"key": K, "value": V}` after a set, `{"key": K, "deleted": true}` after a delete.
    public static let changed = RPCEventDescriptor(
        name: "changed", summary: "A key was set (with its new value) or deleted.",
        schema: [
            "type": "object", "required": ["key"],
            "properties": ["key": ["type": "string"], "value": [:], "deleted": ["type": "boolean", "const": true]],
        ])
}
