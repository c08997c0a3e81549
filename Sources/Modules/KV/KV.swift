import RPCModuleSDK

/// `kv`: a store of JSON values under string keys, shared by all clients of one handler.
///
/// `[Config]` `File=PATH` keeps the store in that file: read when the handler starts (a missing file is an
/// empty store; a file that cannot be read or is not a JSON object refuses the handler, naming the path),
/// and rewritten atomically after every change. Without `File=` the store lives in memory only.
///
/// `[Config]` `MaxKeys=` (default 10000) and `MaxBytes=` (default 1048576: keys and values' JSON together)
/// bound the store, so that no client can grow it — and the file rewritten on every change — without limit.
///
/// Errors of its own: 1 "No such key", data `{"key": KEY}`; 2 "Store full", data `{"limit": "MaxKeys" or
/// "MaxBytes", "value": N}`, when a `set` would pass a bound (nothing is changed).
///
/// Event `kv.changed` after every change: `{"key": K, "value": V}` for a set, `{"key": K, "deleted": true}`
/// for a delete of a key that existed.
struct KV: RPCModule {
    static let name = "kv"
    static let version = "1.0.0"
    static let summary = "Stores JSON values under string keys, optionally persisted to a file."

    let store: KVStore
    let context: RPCModuleContext

    struct Change: Encodable, Sendable {
        let key: String
        var value: JSONValue?
        var deleted: Bool?
    }

    static let changed = RPCModuleEvent<Change>(
        "changed", summary: "A key was set (with its new value) or deleted.",
        schema: [
            "type": "object", "required": ["key"],
            "properties": ["key": ["type": "string"], "value": [:], "deleted": ["type": "boolean", "const": true]],
        ])
    static var events: [any RPCModuleEventDeclaration] { [changed] }

    init(context: RPCModuleContext) throws {
        self.context = context
        let file = context.config("File").flatMap { $0.isEmpty ? nil : $0 }
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

    struct KeyParams: Decodable {
        let key: String
    }

    struct SetParams: Decodable {
        let key: String
        let value: JSONValue
    }

    static var methods: [RPCModuleMethod<KV>] {
        [
            .method(
                "get", summary: "Returns the value stored under key; error 1 when there is none.",
                params: [.string("key")], result: .any("value"), readOnly: true
            ) { (kv, p: KeyParams) in
                guard let value = kv.store.get(p.key) else {
                    throw RPCError(code: 1, message: "No such key", data: ["key": .string(p.key)])
                }
                return value
            },
            .method(
                "set", summary: "Stores value (any JSON value) under key, replacing what was there; returns true. Error 2 when the store is full.",
                params: [.string("key"), .any("value")], result: .boolean("stored"), mayBlock: true
            ) { (kv, p: SetParams) in
                try kv.store.set(p.key, p.value) { kv.context.emit(changed, Change(key: p.key, value: p.value)) }
                return true
            },
            .method(
                "delete", summary: "Removes key; returns whether it existed.", params: [.string("key")],
                result: .boolean("existed"), mayBlock: true
            ) { (kv, p: KeyParams) in
                try kv.store.delete(p.key) { kv.context.emit(changed, Change(key: p.key, deleted: true)) }
            },
            .method(
                "list", summary: "Returns every key, sorted.", result: .array("keys", items: ["type": "string"]),
                readOnly: true
            ) { kv in
                kv.store.keys()
            },
        ]
    }
}

@_cdecl("rpcd_module_entry_v1")
public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(KV.self) }
