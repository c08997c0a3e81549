import RPCProtocol
/// A plugin module for rpcd, written in Swift.
///
/// A module is a type that describes its methods statically and is instantiated once per handler (a module
/// can serve several handlers, each with its own `[Config]`). Export it from the shared library with one line:
///
/// ```swift
/// @_cdecl("rpcd_module_entry_v1")
/// public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(Calc.self) }
/// ```
///
/// Instances are shared by all concurrent calls of their handler, hence `Sendable`: keep mutable state behind
/// a lock (`Synchronization.Mutex`) or in an actor.
public protocol RPCModule: Sendable {
    /// The default service name (`calc` serves `calc.add`): 1 to 15 lower-case letters, digits and single
    /// hyphens, with a letter, not starting or ending with a hyphen. A handler file can serve the module
    /// under another name with `Service=`.
    static var name: String { get }
    /// The module's own version, e.g. "1.2.0"; shown by `rpcd.info` and `rpc.discover`.
    static var version: String { get }
    /// One sentence describing the service.
    static var summary: String { get }
    /// The methods, in a fixed order. Read once, when the module is first exported. Method and parameter
    /// names are a letter, then letters, digits and '_' (at most 64 characters).
    static var methods: [RPCModuleMethod<Self>] { get }
    /// The events the module emits (`RPCModuleContext.emit`), in a fixed order. Read once, like `methods`.
    /// Default: none.
    static var events: [any RPCModuleEventDeclaration] { get }
    /// The `[Config]` keys the module reads (`RPCModuleContext.config`). rpcd checks each handler's `[Config]`
    /// against them as it checks `[Handler]`: a misspelled key refuses the handler, with "did you mean", and
    /// `rpcd --check-config` reports it. Default nil: not checked.
    static var configKeys: [String]? { get }
    /// What each `[Config]` value must be, declared as params are: `.integer("MaxKeys", minimum: 1)`,
    /// `.boolean("Verbose")`, `.string("Mode", ...)` with an `enum` schema. rpcd checks each value against its
    /// schema before anything changes (`rpcd --check-config`, and before `init` at start-up and reload), and
    /// refuses the handler naming the file and line; a declared key counts as one of `configKeys`.
    /// `context.config(_:)` still hands over the text. Default: none (values are the module's to check).
    static var config: [RPCParam] { get }

    /// Creates the instance for one handler. Throwing refuses the handler: the host logs the error's
    /// description (an `RPCError`'s message) as the reason. Runs synchronously; keep it short.
    init(context: RPCModuleContext) throws

    /// Called once when the handler is removed (reload, shutdown), before the instance is released. Calls
    /// still running then have already timed out for their clients and are cancelled. Default: nothing.
    func shutdown()
}

extension RPCModule {
    public func shutdown() {}
    public static var events: [any RPCModuleEventDeclaration] { [] }
    public static var configKeys: [String]? { nil }
    public static var config: [RPCParam] { [] }
}
