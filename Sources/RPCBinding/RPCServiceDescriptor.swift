public import RPCJSON
public import RPCProtocol

/// What a service offers: the single source of `rpc.discover` entries and of the interface fingerprint, for
/// built-in services, modules (`RPCModules` reads it from the C descriptor) and typed interfaces (`RPCInterface`
/// builds it from a Swift protocol) alike.
public struct RPCServiceDescriptor: Hashable, Sendable {
    /// The service name: the part of a method name before the first dot (`calc` in `calc.add`).
    public var name: String
    /// The implementation's version (a module's version; rpcd's for built-in services).
    public var version: String
    public var summary: String
    public var methods: [RPCMethodDescriptor]
    /// The events the service emits, which clients subscribe to as `service.event` (`rpc.subscribe`).
    public var events: [RPCEventDescriptor]

    public init(
        name: String, version: String, summary: String, methods: [RPCMethodDescriptor], events: [RPCEventDescriptor] = []
    ) {
        self.name = name
        self.version = version
        self.summary = summary
        self.methods = methods
        self.events = events
    }

    /// A stable hash of the method signatures (names, parameter names, schemas and requiredness, result
    /// schemas) and event signatures (names, payload schemas), as 16 lowercase hex digits. Summaries and
    /// versions are not part of it, so a fingerprint changes exactly when a client could notice the interface
    /// change. A service without events hashes exactly what it did before events existed, so its fingerprint
    /// stayed the same. FNV-1a 64 over canonical JSON: it detects mismatches, it is not meant to resist forgery.
    public var fingerprint: String {
        let signature: JSONValue = .array(methods.sorted { $0.name < $1.name }.map(\.signature))
        var bytes = Array(name.utf8) + [0] + signature.serialized()
        if !events.isEmpty {
            let eventSignature: JSONValue = .array(events.sorted { $0.name < $1.name }.map(\.signature))
            bytes += [0] + eventSignature.serialized()
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// One method of a service, described for discovery and parameter binding.
public struct RPCMethodDescriptor: Hashable, Sendable {
    /// The method name within its service (`add` in `calc.add`).
    public var name: String
    public var summary: String
    /// Parameters in positional order; by-name calls use their names.
    public var params: [RPCParam]
    public var result: RPCParam?
    /// Errors the method documents (beyond the standard ones every method can return).
    public var errors: [RPCError]
    public var flags: Flags

    public struct Flags: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// The method may block its thread; rpcd runs it on a worker pool instead of an event loop.
        public static let mayBlock = Flags(rawValue: 1 << 0)
        /// The method changes nothing (it only reads): access rules' `AllowRead=` lets peers call it. A
        /// method without the flag counts as state-changing.
        public static let readOnly = Flags(rawValue: 1 << 1)
        /// Every peer may call it, whatever the access rules say: it reaches nothing beyond the caller's own
        /// connection (`rpc.cancel`). Only built-in methods have it; modules cannot declare it.
        public static let anyPeer = Flags(rawValue: 1 << 2)
        /// The method takes its params by position only, as a list of any length (`calc.sum`): `rpc.discover`
        /// says `"paramStructure": "by-position"` rather than `"either"`.
        public static let byPosition = Flags(rawValue: 1 << 3)
        /// The method declares no params yet takes any, handed to it as sent (`echo.echo`; a raw method with
        /// none declared; C: `RPCD_METHOD_ANY_PARAMS`): `rpc.discover` says so in `x-rpcd-params`.
        public static let anyParams = Flags(rawValue: 1 << 4)
    }

    public init(
        name: String, summary: String = "", params: [RPCParam] = [],
        result: RPCParam? = nil, errors: [RPCError] = [], flags: Flags = []
    ) {
        self.name = name
        self.summary = summary
        self.params = params
        self.result = result
        self.errors = errors
        self.flags = flags
    }

    var signature: JSONValue {
        [
            "name": .string(name),
            "params": .array(params.map { ["name": .string($0.name), "required": .bool($0.required), "schema": $0.schema] }),
            "result": result?.schema ?? .null,
        ]
    }
}

/// One event of a service, described for discovery: clients subscribe to it as `service.name` and receive
/// payloads that match `schema`.
public struct RPCEventDescriptor: Hashable, Sendable {
    /// The event name within its service (`changed` in `kv.changed`); the same rule as method names.
    public var name: String
    public var summary: String
    /// The JSON Schema of the payload (`{}`: any value).
    public var schema: JSONValue

    public init(name: String, summary: String = "", schema: JSONValue = [:]) {
        self.name = name
        self.summary = summary
        self.schema = schema
    }

    var signature: JSONValue { ["name": .string(name), "schema": schema] }
}
