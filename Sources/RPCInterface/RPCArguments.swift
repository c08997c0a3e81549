/// A call's params, bound to a method's declared parameters; the code `@RPCInterface` generates decodes each
/// argument.
public struct RPCArguments: Sendable {
    private let bound: BoundParams?
    private let list: [JSONValue]

    private init(bound: BoundParams?, list: [JSONValue]) {
        self.bound = bound
        self.list = list
    }

    /// How one declared method's calls are bound, prepared once with the method.
    struct Binding: Sendable {
        /// The declaration, with `.byPosition` for a params list (`rpc.discover` says `"by-position"`).
        let descriptor: RPCMethodDescriptor
        /// Nil for a params list, which is taken whole.
        private let binder: ParamsBinder?

        init(_ descriptor: RPCMethodDescriptor, paramsList: Bool) {
            var descriptor = descriptor
            if paramsList { descriptor.flags.insert(.byPosition) }
            self.descriptor = descriptor
            self.binder = paramsList ? nil : ParamsBinder(descriptor.params)
        }

        /// `input`'s params bound member by member from their text, without a tree of the whole params; for a
        /// params list, the list (none when absent). Params that do not fit are -32602.
        func arguments(_ input: some RPCMethodInput) throws -> RPCArguments {
            if let binder {
                return RPCArguments(bound: try input.withParamsText { try binder.bind(text: $0) }, list: [])
            }
            switch try input.paramsValue() {
            case .null: return RPCArguments(bound: nil, list: [])
            case .array(let elements): return RPCArguments(bound: nil, list: elements)
            default: throw RPCError.invalidParams("\(descriptor.name) takes its params as a list, by position")
            }
        }
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
