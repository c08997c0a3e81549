import RPCInterface
import RPCJSON

/// A module that implements an interface declared with `@RPCInterface`: its service name, summary and methods
/// come from the declaration, so `rpc.discover` and the fingerprint are the declaration's and a proxy compiled
/// from the same protocol is served.
///
/// ```swift
/// struct Calc: SyncCalculator, RPCInterfaceModule {
///     static let version = "1.0.0"
///     init(context: RPCModuleContext) {}
///     func add(a: Double, b: Double) throws -> Double { a + b }
/// }
///
/// @_cdecl("rpcd_module_entry_v1")
/// public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(Calc.self) }
/// ```
///
/// `rpcInterface` and `rpcImplementations` are written by the macro, as members of the protocol every
/// conforming type has; nothing to implement but the protocol's methods. Conform to the protocol itself
/// (`Calculator`) when methods `await`; to its `Sync` form (`SyncCalculator`) when none does, and each call is
/// a plain function call on rpcd's thread, without a task. Calls are bound, checked and mapped
/// to errors exactly as for `RPCModuleMethod.method` (the same `RPCMethod`, the same `ParamsBinding`).
public protocol RPCInterfaceModule: RPCModule {
    static var rpcInterface: RPCInterfaceDeclaration { get }
    static var rpcImplementations: [RPCMethodImplementation<Self>] { get }
}

extension RPCInterfaceModule {
    public static var name: String { rpcInterface.service }
    public static var summary: String { rpcInterface.summary }
    /// The declared methods as they are: an interface's methods and a module's are the one `RPCMethod` type.
    public static var methods: [RPCModuleMethod<Self>] { rpcImplementations }
    /// The interface's events (`@RPCInterface(service:events:)`): the declaration is their one source, so the
    /// module emits what a proxy of the same protocol expects. Leave `events` out: a module's own `events` that
    /// differ from the interface's is a problem `RPCModuleExport.problems` reports.
    public static var events: [any RPCModuleEventDeclaration] { rpcInterface.events.map(RPCModuleEvent<JSONValue>.init) }
}

extension RPCModuleEvent {
    /// The event an interface declares (`@RPCInterface(service:events:)`), with the payload type the module
    /// emits: the name, summary and schema are the declaration's, so the fingerprints agree.
    public init(_ declared: RPCEventDescriptor) {
        self.init(declared.name, summary: declared.summary, schema: declared.schema)
    }
}
