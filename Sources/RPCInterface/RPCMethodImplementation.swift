/// One declared method of an interface, and how to run it on an implementation of that interface: what
/// `@RPCInterface` writes for each method of the protocol (its static `rpcImplementations`), and what the
/// module SDK turns into a module method. Independent of the module ABI, so it can be run in-process too.
public struct RPCMethodImplementation<Implementation>: Sendable {
    /// Name, summary, parameters (names and schemas from the Swift declaration), result, documented errors,
    /// flags.
    public let descriptor: RPCMethodDescriptor
    /// Whether the method takes its params as a list by position (`[1, 2, 3]`, any count): a method whose one
    /// parameter is an array declared with `@RPCMethod(paramsList: true)`. Its descriptor lists no parameters.
    public let paramsList: Bool
    /// Binds calls' params to `descriptor.params`; made once, with the method.
    let binder: ParamsBinder
    let invoke: @Sendable (Implementation, RPCArguments) async throws -> [UInt8]
    /// The same, for an implementation whose method does not suspend (the `Sync` protocol's): the SDK calls it
    /// straight on the calling thread, without making a task.
    let invokeNow: (@Sendable (Implementation, RPCArguments) throws -> [UInt8])?

    public init(
        _ descriptor: RPCMethodDescriptor, paramsList: Bool = false,
        invoke: @escaping @Sendable (Implementation, RPCArguments) async throws -> [UInt8]
    ) {
        var descriptor = descriptor
        if paramsList { descriptor.flags.insert(.byPosition) }
        self.descriptor = descriptor
        self.paramsList = paramsList
        self.binder = ParamsBinder(descriptor.params)
        self.invoke = invoke
        self.invokeNow = nil
    }

    public init(
        _ descriptor: RPCMethodDescriptor, paramsList: Bool = false,
        invokeNow: @escaping @Sendable (Implementation, RPCArguments) throws -> [UInt8]
    ) {
        var descriptor = descriptor
        if paramsList { descriptor.flags.insert(.byPosition) }
        self.descriptor = descriptor
        self.paramsList = paramsList
        self.binder = ParamsBinder(descriptor.params)
        self.invoke = { implementation, arguments in try invokeNow(implementation, arguments) }
        self.invokeNow = invokeNow
    }

    /// Whether `runNow(_:params:)` can run the method without a task.
    public var runsNow: Bool { invokeNow != nil }

    /// Binds `params` (as sent; `.null` when absent) to the declared parameters, checks and decodes them, runs
    /// the method and returns the result's JSON text. Binding problems throw -32602; the method's own errors
    /// pass through unchanged.
    public func run(_ implementation: Implementation, params: JSONValue) async throws -> [UInt8] {
        try await invoke(implementation, try RPCArguments(binding: params, for: self))
    }

    /// `run(_:params:)` for a method that `runsNow`, on the calling thread.
    public func runNow(_ implementation: Implementation, params: JSONValue) throws -> [UInt8] {
        guard let invokeNow else { preconditionFailure("\(descriptor.name) has an async implementation") }
        return try invokeNow(implementation, try RPCArguments(binding: params, for: self))
    }

    /// `run(_:params:)` for params still as JSON text (empty when absent), as a module receives them: bound
    /// member by member, without a tree of the whole params. Text that is not JSON is -32602.
    public func run(_ implementation: Implementation, paramsText: [UInt8]) async throws -> [UInt8] {
        let arguments = try paramsText.withUnsafeBytes { try RPCArguments(bindingText: $0, for: self) }
        return try await invoke(implementation, arguments)
    }

    /// `run(_:paramsText:)` for a method that `runsNow`, on the calling thread.
    public func runNow(_ implementation: Implementation, paramsText: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard let invokeNow else { preconditionFailure("\(descriptor.name) has an async implementation") }
        return try invokeNow(implementation, try RPCArguments(bindingText: paramsText, for: self))
    }
}

/// A call's params, bound to a method's declared parameters; the generated code decodes each argument.
public struct RPCArguments: Sendable {
    private let bound: BoundParams?
    private let list: [JSONValue]

    private init(bound: BoundParams?, list: [JSONValue]) {
        self.bound = bound
        self.list = list
    }

    init<Implementation>(binding params: JSONValue, for method: RPCMethodImplementation<Implementation>) throws {
        guard method.paramsList else {
            self.init(bound: try method.binder.bind(params), list: [])
            return
        }
        switch params {
        case .null: self.init(bound: nil, list: [])
        case .array(let elements): self.init(bound: nil, list: elements)
        default: throw RPCError.invalidParams("\(method.descriptor.name) takes its params as a list, by position")
        }
    }

    init<Implementation>(bindingText text: UnsafeRawBufferPointer, for method: RPCMethodImplementation<Implementation>) throws {
        guard method.paramsList else {
            self.init(bound: try method.binder.bind(text: text), list: [])
            return
        }
        let params: JSONValue
        do {
            params = JSONScanner.isBlank(text) ? .null : try JSONValue(parsing: text)
        } catch {
            throw RPCError.invalidParams("params are not valid JSON: \(error)")
        }
        try self.init(binding: params, for: method)
    }

    /// The argument for parameter `name`: nil for an absent `Optional`; -32602 naming the parameter when it
    /// does not decode.
    public func decode<Value: Decodable>(_ name: String, as type: Value.Type = Value.self) throws -> Value {
        try ParamsBinding.decode(type, member: name, value: bound?.value(named: name))
    }

    /// The whole list of a `paramsList` method, each element decoded as `Element`.
    public func decodeList<Element: Decodable>(of type: Element.Type = Element.self) throws -> [Element] {
        let schema = RPCSchema.of(Element.self)
        return try list.enumerated().map { position, element in
            if let problem = ParamsBinding.problem(with: element, against: schema) {
                throw RPCError.invalidParams("params[\(position)]: \(problem)")
            }
            do {
                return try RPCValueEncoding.decode(Element.self, from: element)
            } catch {
                throw RPCError.invalidParams("params[\(position)]: \(error)")
            }
        }
    }
}
