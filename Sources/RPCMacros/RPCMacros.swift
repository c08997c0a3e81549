/// What a Swift program imports to declare a service once, as a protocol, for both sides: the macros and the
/// runtime they generate code for (`RPCInterface`).
///
/// ```swift
/// import RPCMacros
///
/// /// Adds, subtracts, multiplies and divides numbers.
/// @RPCInterface(service: "calc")
/// public protocol Calculator {
///     /// Returns a + b.
///     @RPCMethod(result: "sum", readOnly: true)
///     func add(a: Double, b: Double) async throws -> Double
/// }
/// ```
///
/// A module implements the protocol and exports it (`RPCModuleSDK`'s `RPCInterfaceModule`); a client calls
/// `try await client.proxy(CalculatorProxy.self)` (`RPCClient`). The macros run in the compiler (plugin
/// `RPCMacrosPlugin`, built on swift-syntax); nothing of swift-syntax is linked into a program or into rpcd.
// Re-exported on purpose: a file that declares an interface imports only RPCMacros, and the macros' expansions
// there name RPCInterface's types (and, through it, RPCBinding's and RPCJSON's).
@_exported public import RPCInterface

/// Declares an interface: `service` is its default service name, `events` the events it emits (subscribed to
/// as `SERVICE.NAME`; part of the fingerprint; a module declares each with `RPCModuleEvent(_:)`). The protocol may declare only methods,
/// each `async throws`, with `Codable` parameters and result (their JSON Schemas come from the types:
/// `RPCSchemaDescribing`). A parameter's name on the wire is its argument label (its name when the label is
/// `_`). Generates `<Protocol>Proxy` (the client side), `Sync<Protocol>` (the protocol without `async`, for
/// implementations that never suspend) and the protocol's static `rpcInterface` and `rpcImplementations`.
@attached(peer, names: suffixed(Proxy), prefixed(Sync))
@attached(extension, names: named(rpcInterface), named(rpcImplementations))
public macro RPCInterface(service: String, events: [RPCEventDescriptor] = []) = #externalMacro(module: "RPCMacrosPlugin", type: "RPCInterfaceMacro")

/// What a method's signature cannot say:
/// - `result`: the result's name in `rpc.discover` (default "result");
/// - `readOnly`: it changes nothing, so `AllowRead=` peers may call it (docs/SECURITY.md);
/// - `mayBlock`: it may block its thread, so rpcd runs it on a worker (docs/MODULES.md);
/// - `errors`: the `RPCDocumentedError` types it throws, listed by `rpc.discover` and thrown back typed by
///   the proxy;
/// - `paramsList`: its one parameter, an array, is the whole params list by position (`calc.sum 1 2 3`).
@attached(peer)
public macro RPCMethod(
    result: String = "result", readOnly: Bool = false, mayBlock: Bool = false,
    errors: [any RPCDocumentedError.Type] = [], paramsList: Bool = false
) = #externalMacro(module: "RPCMacrosPlugin", type: "RPCMethodMacro")
