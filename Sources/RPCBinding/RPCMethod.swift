import RPCJSON
public import RPCProtocol

/// One method of a service, declared once for every kind of service rpcd serves: what it is (`descriptor`:
/// name, summary, parameters and their schemas, result, documented errors, flags such as read-only and
/// may-block; what `rpc.discover` lists and the fingerprint hashes) and the code that runs it on a `Target`
/// for one call, handed over as an `Input`.
///
/// The three ways of writing a method are this type with their own `Input`:
/// - the daemon's built-in services (`rpc.*`, `rpcd.*`, `RPCTypedService`): `RPCMethod<Service, RPCCall>`;
/// - a Swift module's methods (`RPCModuleMethod<Module>`, the SDK's name for it): `RPCMethod<Module, RPCParamsText>`;
/// - a typed interface's methods (`RPCMethodImplementation<Implementation>`, what `@RPCInterface` writes): the
///   same type as a module's, so a module exports them as they are.
/// The factories below bind a call's params to the declared parameters (`ParamsBinder`, with the rules
/// `ParamsBinding` documents), decode them into `Params` and encode the result, for all three.
///
/// A `.now` body runs on the thread that calls it and must not block unless the method is `.mayBlock`; a
/// `.suspending` body runs in a task its caller makes. Binding problems throw -32602 `RPCError`s; the body's
/// own errors pass through unchanged, for the caller to map (`RPCError.init(from:)`).
public struct RPCMethod<Target, Input: RPCMethodInput>: Sendable {
    public var descriptor: RPCMethodDescriptor
    public let body: Body

    /// How a method answers: on the calling thread, or from a task.
    public enum Body: Sendable {
        /// The same answer for every call, which must come without params (`rpcd.ping`): a caller may answer
        /// it without making an `Input` at all.
        case constant(Input.Output)
        /// A body that never suspends: a plain function call, with no task, no executor and no hop.
        case now(@Sendable (Target, Input) throws -> Input.Output)
        /// A body that `await`s: its caller runs it in a task.
        case suspending(@Sendable (Target, Input) async throws -> Input.Output)
    }

    public init(_ descriptor: RPCMethodDescriptor, body: Body) {
        self.descriptor = descriptor
        self.body = body
    }

    /// The body when it answers on the calling thread; nil when it suspends.
    public var runNow: (@Sendable (Target, Input) throws -> Input.Output)? {
        switch body {
        case .constant(let answer):
            { _, input in
                try input.requireNoParams()
                return answer
            }
        case .now(let run): run
        case .suspending: nil
        }
    }

    /// Runs the method to its answer, whichever its body.
    public func run(_ target: Target, _ input: Input) async throws -> Input.Output {
        switch body {
        case .constant, .now: try runNow!(target, input)
        case .suspending(let run): try await run(target, input)
        }
    }

    /// This method, listing `errors` (each one's code and message) in `rpc.discover`.
    public func documenting(_ errors: [RPCError]) -> Self {
        var method = self
        method.descriptor.errors = errors
        return method
    }
}

// MARK: Typed methods
//
// Each factory comes twice: for a body that does not suspend (which Swift picks for a closure without
// `await`: a `.now` method) and for one that does (a `.suspending` method). The binding and encoding are
// the same.

extension RPCMethod {
    /// A method with parameters: the call's params are bound to `params` (by position or by name), checked
    /// against their schemas and decoded into `Params`, whose coding keys are the parameter names.
    public static func method<Params: Decodable & SendableMetatype, Value: Encodable & SendableMetatype>(
        _ name: String, summary: String = "", params: [RPCParam], result: RPCParam? = nil,
        flags: RPCMethodDescriptor.Flags = [], _ body: @escaping @Sendable (Target, Params, Input) throws -> Value
    ) -> RPCMethod {
        let binder = ParamsBinder(params)
        return RPCMethod(.init(name: name, summary: summary, params: params, result: result, flags: flags), body: .now {
            Input.output(try ResultEncoding.encode(try body($0, try $1.decode(Params.self, binding: binder), $1)))
        })
    }

    public static func method<Params: Decodable & SendableMetatype, Value: Encodable & SendableMetatype>(
        _ name: String, summary: String = "", params: [RPCParam], result: RPCParam? = nil,
        flags: RPCMethodDescriptor.Flags = [], _ body: @escaping @Sendable (Target, Params, Input) async throws -> Value
    ) -> RPCMethod {
        let binder = ParamsBinder(params)
        return RPCMethod(.init(name: name, summary: summary, params: params, result: result, flags: flags), body: .suspending {
            Input.output(try ResultEncoding.encode(try await body($0, try $1.decode(Params.self, binding: binder), $1)))
        })
    }

    /// A method without parameters: any params other than none, `[]` or `{}` are -32602.
    public static func method<Value: Encodable & SendableMetatype>(
        _ name: String, summary: String = "", result: RPCParam? = nil, flags: RPCMethodDescriptor.Flags = [],
        _ body: @escaping @Sendable (Target, Input) throws -> Value
    ) -> RPCMethod {
        RPCMethod(.init(name: name, summary: summary, result: result, flags: flags), body: .now { target, input in
            try input.requireNoParams()
            return Input.output(try ResultEncoding.encode(try body(target, input)))
        })
    }

    public static func method<Value: Encodable & SendableMetatype>(
        _ name: String, summary: String = "", result: RPCParam? = nil, flags: RPCMethodDescriptor.Flags = [],
        _ body: @escaping @Sendable (Target, Input) async throws -> Value
    ) -> RPCMethod {
        RPCMethod(.init(name: name, summary: summary, result: result, flags: flags), body: .suspending { target, input in
            try input.requireNoParams()
            return Input.output(try ResultEncoding.encode(try await body(target, input)))
        })
    }
}
