import RPCJSON
import RPCProtocol

/// One method of a module: how it is described (name, parameters, schemas, flags) and the code that runs it.
///
/// Build methods with the static factories:
/// - ``method(_:summary:params:result:mayBlock:readOnly:_:)``: typed. The call's params are bound to the declared
///   parameter names (see ``RPCParam``), checked against their schemas, and decoded into `Params`.
/// - ``method(_:summary:result:mayBlock:readOnly:_:)``: typed, without parameters.
/// - ``raw(_:summary:params:result:mayBlock:readOnly:_:)``: untyped, for variadic or free-form params.
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
public struct RPCModuleMethod<Module: RPCModule>: Sendable {
    /// The name within the service: "add" serves "calc.add".
    public let name: String
    public let summary: String
    /// In positional order.
    public let params: [RPCParam]
    /// The result: its name and schema reach `rpc.discover` (`rpcd_method.result_name`, `result_schema_json`);
    /// its summary is documentation in Swift only.
    public let result: RPCParam?
    /// Whether the body may block its thread. Such calls are run by rpcd on its bounded worker pool, and the
    /// SDK runs the body on that worker thread (instead of Swift's shared cooperative pool), which blocks
    /// until the body finishes. Use it for blocking system calls, file I/O, or CPU-heavy work.
    public let mayBlock: Bool
    /// Whether the method changes nothing (it only reads or computes). Access rules let `AllowRead=` peers call
    /// read-only methods; every other method needs `Allow=` (docs/SECURITY.md). Declare it only when true.
    public let readOnly: Bool
    /// The errors the method answers with beyond the standard ones (code and message), listed by `rpc.discover`
    /// under the method's `errors`; set with ``documenting(_:)``, or from the interface's `@RPCMethod(errors:)`.
    public internal(set) var errors: [RPCError] = []
    /// Whether the params are a list by position only (`@RPCMethod(paramsList: true)`): `rpc.discover` says
    /// `"paramStructure": "by-position"`.
    var byPosition = false

    /// Runs the method: the params' JSON text as the client sent it (empty when absent) → result JSON text.
    /// Binding problems throw `RPCError`s (-32602); errors from the body pass through unchanged.
    let run: @Sendable (Module, [UInt8]) async throws -> [UInt8]
    /// The same, for a body that is not `async`: the SDK calls it straight on the calling thread, without
    /// making a task at all.
    let runNow: (@Sendable (Module, [UInt8]) throws -> [UInt8])?

    private init(
        name: String, summary: String, params: [RPCParam], result: RPCParam?, mayBlock: Bool, readOnly: Bool,
        run: @escaping @Sendable (Module, [UInt8]) async throws -> [UInt8],
        runNow: (@Sendable (Module, [UInt8]) throws -> [UInt8])?
    ) {
        self.name = name
        self.summary = summary
        self.params = params
        self.result = result
        self.mayBlock = mayBlock
        self.readOnly = readOnly
        self.run = run
        self.runNow = runNow
    }

    init(
        name: String, summary: String, params: [RPCParam], result: RPCParam?, mayBlock: Bool, readOnly: Bool,
        run: @escaping @Sendable (Module, [UInt8]) async throws -> [UInt8]
    ) {
        self.init(
            name: name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly,
            run: run, runNow: nil)
    }

    /// A method whose body never suspends.
    init(
        name: String, summary: String, params: [RPCParam], result: RPCParam?, mayBlock: Bool, readOnly: Bool,
        runNow: @escaping @Sendable (Module, [UInt8]) throws -> [UInt8]
    ) {
        self.init(
            name: name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly,
            run: { module, text in try runNow(module, text) }, runNow: runNow)
    }

    /// A typed method: `Params` is a `Decodable` type whose properties are the declared `params`. (Both types
    /// must be `Sendable`, which internal structs of `Sendable` members are implicitly.)
    /// This method, listing `errors` (each one's code and message) in `rpc.discover`.
    public func documenting(_ errors: [RPCError]) -> Self {
        var method = self
        method.errors = errors
        return method
    }

    public static func method<Params: Decodable & Sendable, Output: Encodable & Sendable>(
        _ name: String, summary: String = "", params: [RPCParam], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Module, Params) async throws -> Output
    ) -> RPCModuleMethod {
        let binder = ParamsBinder(params)
        return RPCModuleMethod(name: name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly) {
            module, text in
            let decoded = try ParamsBinding.decode(Params.self, from: try binder.bind(try Self.parse(text)).members)
            return try ResultEncoding.encode(try await body(module, decoded))
        }
    }

    /// A typed method without parameters: any params other than none, `[]` or `{}` are -32602.
    public static func method<Output: Encodable & Sendable>(
        _ name: String, summary: String = "", result: RPCParam? = nil, mayBlock: Bool = false, readOnly: Bool = false,
        _ body: @escaping @Sendable (Module) async throws -> Output
    ) -> RPCModuleMethod {
        RPCModuleMethod(name: name, summary: summary, params: [], result: result, mayBlock: mayBlock, readOnly: readOnly) {
            module, text in
            _ = try ParamsBinding.bind(try Self.parse(text), to: [])
            return try ResultEncoding.encode(try await body(module))
        }
    }

    /// An untyped method: the body gets the params exactly as sent (an array, an object, or `.null` when the
    /// call has none) and returns the result. `params` only describes them for `rpc.discover`; nothing is
    /// bound or checked. Throw `RPCError.invalidParams(_:)` to reject them.
    public static func raw(
        _ name: String, summary: String = "", params: [RPCParam] = [], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Module, JSONValue) async throws -> JSONValue
    ) -> RPCModuleMethod {
        RPCModuleMethod(name: name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly) {
            module, text in
            try await body(module, try Self.parse(text)).checkedSerialization()
        }
    }

    /// A pass-through method: the body gets the params' JSON text exactly as sent (`null` when the call has
    /// none), undecoded, and returns JSON text, which rpcd checks before sending. For methods that hand data
    /// along unchanged; they pay for no tree in and no serialization out. `params` only describes them.
    public static func rawJSON(
        _ name: String, summary: String = "", params: [RPCParam] = [], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false,
        _ body: @escaping @Sendable (Module, RPCRawJSON) async throws -> RPCRawJSON
    ) -> RPCModuleMethod {
        RPCModuleMethod(name: name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly) {
            module, text in
            try await body(module, text.isEmpty ? .null : RPCRawJSON(trusted: text)).bytes
        }
    }

    // MARK: Bodies that are not async
    //
    // Overloads of the factories above for bodies without `await`, which Swift picks for a closure that does
    // not suspend: such a method is run as a plain function call on the thread rpcd calls the module on, with
    // no task, no executor and no hop. The binding and encoding are the same.

    public static func method<Params: Decodable & Sendable, Output: Encodable & Sendable>(
        _ name: String, summary: String = "", params: [RPCParam], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Module, Params) throws -> Output
    ) -> RPCModuleMethod {
        let binder = ParamsBinder(params)
        return RPCModuleMethod(name: name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly) {
            (module: Module, text: [UInt8]) throws -> [UInt8] in
            let bound = try binder.bind(try Self.parse(text)).members
            return try ResultEncoding.encode(try body(module, try ParamsBinding.decode(Params.self, from: bound)))
        }
    }

    public static func method<Output: Encodable & Sendable>(
        _ name: String, summary: String = "", result: RPCParam? = nil, mayBlock: Bool = false, readOnly: Bool = false,
        _ body: @escaping @Sendable (Module) throws -> Output
    ) -> RPCModuleMethod {
        RPCModuleMethod(name: name, summary: summary, params: [], result: result, mayBlock: mayBlock, readOnly: readOnly) {
            (module: Module, text: [UInt8]) throws -> [UInt8] in
            _ = try ParamsBinding.bind(try Self.parse(text), to: [])
            return try ResultEncoding.encode(try body(module))
        }
    }

    public static func raw(
        _ name: String, summary: String = "", params: [RPCParam] = [], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Module, JSONValue) throws -> JSONValue
    ) -> RPCModuleMethod {
        RPCModuleMethod(name: name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly) {
            (module: Module, text: [UInt8]) throws -> [UInt8] in
            try body(module, try Self.parse(text)).checkedSerialization()
        }
    }

    public static func rawJSON(
        _ name: String, summary: String = "", params: [RPCParam] = [], result: RPCParam? = nil,
        mayBlock: Bool = false, readOnly: Bool = false, _ body: @escaping @Sendable (Module, RPCRawJSON) throws -> RPCRawJSON
    ) -> RPCModuleMethod {
        RPCModuleMethod(name: name, summary: summary, params: params, result: result, mayBlock: mayBlock, readOnly: readOnly) {
            (module: Module, text: [UInt8]) throws -> [UInt8] in
            try body(module, text.isEmpty ? .null : RPCRawJSON(trusted: text)).bytes
        }
    }

    /// The params as a tree: `.null` when the call has none. rpcd validated them with the frame, so a syntax
    /// error means a host that broke the ABI's promise.
    static func parse(_ text: [UInt8]) throws -> JSONValue {
        guard !text.isEmpty else { return .null }
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw RPCError.invalidParams("params are not valid JSON: \(error)")
        }
    }

    /// Runs the method in-process as rpcd would (binding, checking, error mapping), without the C ABI: for
    /// unit tests of a module. `params` is `.null` for a call without params.
    public func call(_ module: Module, params: JSONValue = .null) async -> RPCModuleReply {
        let text = params == .null ? [] : params.serialized()
        switch await CallOutcome.run({ try await run(module, text) }) {
        case .result(let bytes):
            // The SDK produced these bytes itself, so they parse.
            return .result((try? JSONValue(parsing: bytes)) ?? .null)
        case .error(let error, _):
            return .error(error)
        }
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
