import RPCJSON
import RPCProtocol

/// One method of a module: rpcd's one method declaration (`RPCMethod`: name, parameters, schemas, result,
/// documented errors, flags, and the code that runs it), run on the module's instance for the params' text.
/// The daemon's own services and typed interfaces declare their methods with the same type.
///
/// Build methods with the static factories:
/// - ``method(_:summary:params:result:mayBlock:readOnly:_:)``: typed. The call's params are bound to the declared
///   parameter names (see ``RPCParam``), checked against their schemas, and decoded into `Params`.
/// - ``method(_:summary:result:mayBlock:readOnly:_:)``: typed, without parameters.
/// - ``raw(_:summary:params:result:mayBlock:readOnly:_:)``: untyped, for variadic or free-form params.
/// - ``rawJSON(_:summary:params:result:mayBlock:readOnly:_:)``: the params' text in, JSON text out.
/// A body that does not `await` is run as a plain function call on the thread rpcd calls the module on, with
/// no task; one that does runs in a task (`RPCMethod.Body`). `documenting(_:)` lists the errors it answers with.
///
/// Binding rules for typed methods:
/// - by position (`[1, 2]`): element *i* is the *i*-th declared parameter; more elements than parameters is
///   -32602; missing trailing elements are absent.
/// - by name (`{"a": 1, "b": 2}`): the members are the parameters; a name that is not declared is -32602.
/// - no params at all: every parameter is absent.
/// - `null` for an optional parameter counts as absent (so `[null, 5]` skips the first one).
/// - an absent required parameter is -32602 "missing parameter 'a'"; an optional one is simply not in the
///   object `Params` is decoded from, so it must be an `Optional` property.
/// - each present value is checked against the parameter's schema (`type`, `minimum`, `maximum`, `enum`),
///   then `Params` is decoded from them (a `JSONValue` property gets its value exactly as sent; integer
///   properties accept only exact integers in range); a `DecodingError` is -32602 with a detail naming the
///   field. `Params`' coding keys must be the declared names.
public typealias RPCModuleMethod<Module: RPCModule> = RPCMethod<Module, RPCParamsText>

extension RPCMethod where Input == RPCParamsText {
    /// The name within the service: "add" serves "calc.add".
    public var name: String { descriptor.name }
    public var summary: String { descriptor.summary }
    /// In positional order.
    public var params: [RPCParam] { descriptor.params }
    /// The result: its name and schema reach `rpc.discover` (`rpcd_method.result_name`, `result_schema_json`);
    /// its summary is documentation in Swift only.
    public var result: RPCParam? { descriptor.result }
    /// Whether the body may block its thread. Such calls are run by rpcd on its bounded worker pool, and the
    /// SDK runs the body on that worker thread (instead of Swift's shared cooperative pool), which blocks
    /// until the body finishes. Use it for blocking system calls, file I/O, or CPU-heavy work.
    public var mayBlock: Bool { descriptor.flags.contains(.mayBlock) }
    /// Whether the method changes nothing (it only reads or computes). Access rules let `AllowRead=` peers call
    /// read-only methods; every other method needs `Allow=` (docs/SECURITY.md). Declare it only when true.
    public var readOnly: Bool { descriptor.flags.contains(.readOnly) }
    /// The errors the method answers with beyond the standard ones (code and message), listed by `rpc.discover`
    /// under the method's `errors`; set with ``documenting(_:)``, or from the interface's `@RPCMethod(errors:)`.
    public var errors: [RPCError] { descriptor.errors }

    /// A typed method: `Params` is a `Decodable` type whose properties are the declared `params`. (Both types
    /// must be `Sendable`, which internal structs of `Sendable` members are implicitly.)
    public static func method<Params: Decodable & Sendable, Value: Encodable & Sendable>(
        _ name: String, summary: String = "", params: [RPCParam], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Target, Params) async throws -> Value
    ) -> RPCMethod {
        method(name, summary: summary, params: params, result: result, flags: .init(mayBlock, readOnly)) {
            (module, params: Params, _) async throws -> Value in try await body(module, params)
        }
    }

    /// A typed method without parameters: any params other than none, `[]` or `{}` are -32602.
    public static func method<Value: Encodable & Sendable>(
        _ name: String, summary: String = "", result: RPCParam? = nil, mayBlock: Bool = false, readOnly: Bool = false,
        _ body: @escaping @Sendable (Target) async throws -> Value
    ) -> RPCMethod {
        method(name, summary: summary, result: result, flags: .init(mayBlock, readOnly)) {
            (module, _) async throws -> Value in try await body(module)
        }
    }

    /// An untyped method: the body gets the params exactly as sent (an array, an object, or `.null` when the
    /// call has none) and returns the result. `params` only describes them for `rpc.discover`; nothing is
    /// bound or checked. Throw `RPCError.invalidParams(_:)` to reject them.
    public static func raw(
        _ name: String, summary: String = "", params: [RPCParam] = [], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Target, JSONValue) async throws -> JSONValue
    ) -> RPCMethod {
        // A pass-through method whose body sees the tree of what passes.
        rawJSON(name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly) {
            module, text async throws -> RPCRawJSON in try RPCRawJSON(await body(module, try text.tree()))
        }
    }

    /// A pass-through method: the body gets the params' JSON text exactly as sent (`null` when the call has
    /// none), undecoded, and returns JSON text, which rpcd checks before sending. For methods that hand data
    /// along unchanged; they pay for no tree in and no serialization out. `params` only describes them.
    public static func rawJSON(
        _ name: String, summary: String = "", params: [RPCParam] = [], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false,
        _ body: @escaping @Sendable (Target, RPCRawJSON) async throws -> RPCRawJSON
    ) -> RPCMethod {
        RPCMethod(
            RPCMethodDescriptor(name: name, summary: summary, params: params, result: result, flags: .raw(mayBlock, readOnly, params)),
            body: .suspending { module, input in try await body(module, RPCRawJSON(params: input)).bytes })
    }

    // MARK: Bodies that are not async
    //
    // Overloads of the factories above for bodies without `await`, which Swift picks for a closure that does
    // not suspend: such a method is run as a plain function call on the thread rpcd calls the module on, with
    // no task, no executor and no hop. The binding and encoding are the same.

    public static func method<Params: Decodable & Sendable, Value: Encodable & Sendable>(
        _ name: String, summary: String = "", params: [RPCParam], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Target, Params) throws -> Value
    ) -> RPCMethod {
        method(name, summary: summary, params: params, result: result, flags: .init(mayBlock, readOnly)) {
            (module, params: Params, _) throws -> Value in try body(module, params)
        }
    }

    public static func method<Value: Encodable & Sendable>(
        _ name: String, summary: String = "", result: RPCParam? = nil, mayBlock: Bool = false, readOnly: Bool = false,
        _ body: @escaping @Sendable (Target) throws -> Value
    ) -> RPCMethod {
        method(name, summary: summary, result: result, flags: .init(mayBlock, readOnly)) {
            (module, _) throws -> Value in try body(module)
        }
    }

    public static func raw(
        _ name: String, summary: String = "", params: [RPCParam] = [], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Target, JSONValue) throws -> JSONValue
    ) -> RPCMethod {
        rawJSON(name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly) {
            module, text throws -> RPCRawJSON in try RPCRawJSON(body(module, try text.tree()))
        }
    }

    public static func rawJSON(
        _ name: String, summary: String = "", params: [RPCParam] = [], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Target, RPCRawJSON) throws -> RPCRawJSON
    ) -> RPCMethod {
        RPCMethod(
            RPCMethodDescriptor(name: name, summary: summary, params: params, result: result, flags: .raw(mayBlock, readOnly, params)),
            body: .now { module, input in try body(module, RPCRawJSON(params: input)).bytes })
    }

    /// Runs the method in-process as rpcd would (binding, checking, error mapping), without the C ABI: for
    /// unit tests of a module. `params` is `.null` for a call without params.
    public func call(_ module: Target, params: JSONValue = .null) async -> RPCModuleReply {
        let input = RPCParamsText(params == .null ? [] : params.serialized())
        switch await CallOutcome.run({ try await run(module, input) }) {
        case .result(let bytes):
            // The SDK produced these bytes itself, so they parse.
            return .result((try? JSONValue(parsing: bytes)) ?? .null)
        case .error(let error, _):
            return .error(error)
        }
    }
}

extension RPCMethodDescriptor.Flags {
    /// The flags a module method declares with `mayBlock:` and `readOnly:`.
    fileprivate init(_ mayBlock: Bool, _ readOnly: Bool) {
        self = []
        if mayBlock { insert(.mayBlock) }
        if readOnly { insert(.readOnly) }
    }

    /// A raw method's: with no params declared it takes any, as sent, and `rpc.discover` says so.
    fileprivate static func raw(_ mayBlock: Bool, _ readOnly: Bool, _ params: [RPCParam]) -> Self {
        var flags = Self(mayBlock, readOnly)
        if params.isEmpty { flags.insert(.anyParams) }
        return flags
    }
}

extension RPCRawJSON {
    /// A pass-through method's params: `null` when the call has none.
    fileprivate init(params: RPCParamsText) {
        self = params.bytes.isEmpty ? .null : RPCRawJSON(trusted: params.bytes)
    }

    /// A raw method's params as a tree; text that is not JSON (which rpcd never passes on) is -32602.
    fileprivate func tree() throws -> JSONValue {
        try RPCParamsText(bytes).paramsValue()
    }
}

/// What a call answered, as seen by `RPCModuleMethod.call(_:params:)`.
public enum RPCModuleReply: Sendable, Hashable {
    case result(JSONValue)
    /// For an unexpected error this is -32603 "Internal error" (the description goes to the log).
    case error(RPCError)
}

/// Where a module call's thrown error becomes its reply (the mapping itself is `RPCError.init(from:)`).
enum CallOutcome: Sendable {
    case result([UInt8])
    /// `logged` is the description to log at error level (for -32603 from an unexpected error), else nil.
    case error(RPCError, logged: String?)

    static func run(_ body: () async throws -> [UInt8]) async -> CallOutcome {
        do {
            return .result(try await body())
        } catch {
            return failure(error)
        }
    }

    static func runNow(_ body: () throws -> [UInt8]) -> CallOutcome {
        do {
            return .result(try body())
        } catch {
            return failure(error)
        }
    }

    private static func failure(_ error: any Error) -> CallOutcome {
        .error(RPCError(from: error), logged: RPCError.isUnexpected(error) ? String(describing: error) : nil)
    }
}
