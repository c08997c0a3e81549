import RPCExampleInterfaces
import RPCModuleSDK

/// `kv`: a store of JSON values under string keys, shared by all clients of one handler.
///
/// `[Config]` `File=PATH` keeps the store in that file: read when the handler starts (a missing file is an
/// empty store; a file that cannot be read or is not a JSON object refuses the handler, naming the path),
/// and rewritten atomically after every change (`RPCStateFile`). Without `File=`, a handler with a
/// `StateDirectory=` keeps it in `kv.json` there, and one without lives in memory only.
///
/// `[Config]` `MaxKeys=` (default 10000) and `MaxBytes=` (default 1048576: keys and values' JSON together)
/// bound the store, so that no client can grow it — and the file rewritten on every change — without limit.
///
/// Its interface, `KeyValueStore`, is declared once (Sources/Modules/Interfaces) for this module and its
/// clients, with its errors: 1 `NoSuchKey`; 2 `StoreFull` when a `set` would pass a bound (nothing is changed).
///
/// Event `kv.changed` after every change: `{"key": K, "value": V}` for a set, `{"key": K, "deleted": true}`
/// for a delete of a key that existed (declared with the interface: `KeyValueStoreEvents.changed`).
struct KV: SyncKeyValueStore, RPCInterfaceModule {
    static let version = "1.0.0"

    let store: KVStore
    let context: RPCModuleContext

    struct Change: Encodable, Sendable {
        let key: String
        var value: JSONValue?
        var deleted: Bool?
    }

    /// Emitted as declared by the interface, which is the module's one declaration of its events.
    static let changed = RPCModuleEvent<Change>(KeyValueStoreEvents.changed)
    static let configKeys: [String]? = ["File", "MaxKeys", "MaxBytes"]
    /// Checked by rpcd before init, and by `rpcd --check-config`: `MaxKeys=lots` never reaches a reload.
    static let config: [RPCParam] = [
        .integer("MaxKeys", minimum: 1, summary: "Keys at most"),
        .integer("MaxBytes", minimum: 1, summary: "Bytes of keys and values' JSON together at most"),
    ]

    init(context: RPCModuleContext) throws {
        self.context = context
        let file = context.config("File").flatMap { $0.isEmpty ? nil : $0 } ?? context.stateDirectory.map { $0 + "/kv.json" }
        var limits = KVLimits()
        limits.maxKeys = try Self.positiveInteger(context, "MaxKeys") ?? limits.maxKeys
        limits.maxBytes = try Self.positiveInteger(context, "MaxBytes") ?? limits.maxBytes
        store = try KVStore(file: file, limits: limits)
        var fields = ["keys": String(store.count)]
        if let file { fields["file"] = file }
        context.logger.info("Store opened", fields)
    }

    /// `[Config] NAME=` as a positive whole number; nil when not set.
    private static func positiveInteger(_ context: RPCModuleContext, _ name: String) throws -> Int? {
        guard let text = context.config(name), !text.isEmpty else { return nil }
        guard let value = Int(text), value > 0 else {
            throw RPCError(code: 0, message: "\(name)= must be a positive whole number, not '\(text)'")
        }
        return value
    }

    func get(key: String) throws -> JSONValue {
        guard let value = store.get(key) else { throw NoSuchKey(key: key) }
        return value
    }

    func set(key: String, value: JSONValue) throws -> Bool {
        try store.set(key, value) { context.emit(Self.changed, Change(key: key, value: value)) }
        return true
    }

    func delete(key: String) throws -> Bool {
        try store.delete(key) { context.emit(Self.changed, Change(key: key, deleted: true)) }
    }

    func list() -> [String] {
        store.keys()
    }
}

@_cdecl("rpcd_module_entry_v1")
public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(KV.self) }
