/// What a module instance gets from its handler: its configuration, its state directory, a logger, and `emit`
/// for its events.
///
/// Inside rpcd all go through the host table (`config_get`, `state_directory`, `log`, `emit`). The public initializer builds a
/// context without a host, for unit-testing a module in-process.
public struct RPCModuleContext: Sendable {
    private let backend: Backend
    /// Logs through the host (journal-style fields), also during `init(context:)`.
    public let logger: RPCModuleLogger

    enum Backend: Sendable {
        case host(HandlerLink)
        case local([String: String], stateDirectory: String?, emitted: (@Sendable (String, [UInt8]) -> Void)?)
    }

    init(link: HandlerLink) {
        backend = .host(link)
        logger = RPCModuleLogger(sink: .host(link))
    }

    /// A context with fixed configuration values and state directory, for tests. Log entries go to `log` (if
    /// given) with their field names already normalized; emitted events to `emitted` (event name, payload JSON).
    public init(
        config: [String: String] = [:],
        stateDirectory: String? = nil,
        log: (@Sendable (RPCModuleLogLevel, String, [String: String]) -> Void)? = nil,
        emitted: (@Sendable (String, [UInt8]) -> Void)? = nil
    ) {
        backend = .local(config, stateDirectory: stateDirectory, emitted: emitted)
        logger = RPCModuleLogger(sink: .local(log))
    }

    /// The value of `key` in the handler's `[Config]` section (`File=/var/lib/kv.json` → `config("File")`),
    /// or nil when it is not set. Keys are compared as the host compares them (exactly, in rpcd).
    public func config(_ key: String) -> String? {
        switch backend {
        case .host(let link): link.config(key)
        case .local(let values, _, _): values[key]
        }
    }

    /// The absolute path of the handler's state directory (`[Handler] StateDirectory=NAME`: `/var/lib/rpcd/NAME`),
    /// or nil when the handler file sets none (or rpcd is older than 0.6). rpcd made it before `init(context:)`;
    /// the module may create, write and delete files beneath it, also in its sandbox, and they stay across
    /// restarts, reloads and updates. `RPCStateFile` reads and replaces a file there safely.
    public var stateDirectory: String? {
        switch backend {
        case .host(let link): link.stateDirectory()
        case .local(_, let stateDirectory, _): stateDirectory
        }
    }

    /// Sends an event's JSON payload: through the host's `emit`, or to the test's `emitted`.
    func emit(name: String, json: [UInt8]) -> Bool {
        switch backend {
        case .host(let link): return link.emit(name, json)
        case .local(_, _, let emitted):
            emitted?(name, json)
            return true
        }
    }
}

/// Log priorities, as syslog(3) and the journal know them.
public enum RPCModuleLogLevel: Int32, Sendable, CaseIterable {
    case error = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7
}

/// Logs through the host. Messages should be constant sentences ("Store loaded"); put the variable parts in
/// fields. Field names are normalized journal-style: upper-cased, every character other than A–Z, 0–9 and
/// '_' replaced by '_', leading underscores dropped, and `FIELD_` put in front of a name that would start
/// with a digit or be empty (`path` → `PATH`, `key-count` → `KEY_COUNT`). The host adds `RPCD_SERVICE` and
/// `RPCD_MODULE` itself.
///
/// After the handler's instance is destroyed, logging does nothing (the host's handler handle is gone).
public struct RPCModuleLogger: Sendable {
    enum Sink: Sendable {
        case host(HandlerLink)
        case local((@Sendable (RPCModuleLogLevel, String, [String: String]) -> Void)?)
    }

    let sink: Sink

    public func log(_ level: RPCModuleLogLevel, _ message: String, _ fields: [String: String] = [:]) {
        var normalized: [String: String] = [:]
        for (name, value) in fields { normalized[Self.fieldName(name)] = value }
        switch sink {
        case .host(let link): link.log(level, message, normalized)
        case .local(let handler): handler?(level, message, normalized)
        }
    }

    public func error(_ message: String, _ fields: [String: String] = [:]) { log(.error, message, fields) }
    public func warning(_ message: String, _ fields: [String: String] = [:]) { log(.warning, message, fields) }
    public func notice(_ message: String, _ fields: [String: String] = [:]) { log(.notice, message, fields) }
    public func info(_ message: String, _ fields: [String: String] = [:]) { log(.info, message, fields) }
    public func debug(_ message: String, _ fields: [String: String] = [:]) { log(.debug, message, fields) }

    /// The journal-style form of a field name (see the type's documentation).
    public static func fieldName(_ name: String) -> String {
        var bytes: [UInt8] = name.uppercased().utf8.map { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"): byte
            default: UInt8(ascii: "_")
            }
        }
        // Every non-ASCII scalar became several '_' bytes; that is acceptable and keeps the rule simple.
        while bytes.first == UInt8(ascii: "_") { bytes.removeFirst() }
        if bytes.isEmpty || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[0]) {
            bytes.insert(contentsOf: "FIELD_".utf8, at: 0)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
