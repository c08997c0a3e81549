import RPCBinding
import RPCJSON

/// An event a module emits, declared once with the type of its payload:
///
/// ```swift
/// struct Change: Encodable, Sendable { var key: String; var value: JSONValue? }
/// static let changed = RPCModuleEvent<Change>("changed", summary: "A key was set or deleted", schema: […])
/// static var events: [any RPCModuleEventDeclaration] { [changed] }
/// …
/// context.emit(Self.changed, Change(key: key, value: value))
/// ```
///
/// Clients subscribe to it as `SERVICE.NAME` (`rpcctl watch kv.changed`); `rpc.discover` lists it with its
/// schema, and it is part of the service's fingerprint.
public struct RPCModuleEvent<Payload: Encodable & Sendable>: RPCModuleEventDeclaration {
    /// The name within the service: a letter, then letters, digits and '_' (as method names).
    public let name: String
    public let summary: String
    /// The JSON Schema of the payload (`[:]`: any value).
    public let schema: JSONValue

    public init(_ name: String, summary: String = "", schema: JSONValue = [:]) {
        self.name = name
        self.summary = summary
        self.schema = schema
    }
}

/// What `RPCModule.events` lists: an `RPCModuleEvent` of any payload type.
public protocol RPCModuleEventDeclaration: Sendable {
    var name: String { get }
    var summary: String { get }
    var schema: JSONValue { get }
}

extension RPCModuleContext {
    /// Sends `payload` to the clients subscribed to `event`. Never blocks and never waits for a subscriber
    /// (rpcd queues it for each); any thread. Returns false when it was not sent: the event is not in the
    /// module's `events`, the payload cannot be encoded as JSON, the handler has ended, or the rpcd the module
    /// runs in predates events (its host table has no `emit`).
    @discardableResult
    public func emit<Payload>(_ event: RPCModuleEvent<Payload>, _ payload: Payload) -> Bool {
        guard let bytes = try? ResultEncoding.encode(payload) else { return false }
        return emit(name: event.name, json: bytes)
    }
}
