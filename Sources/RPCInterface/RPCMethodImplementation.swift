/// One declared method of an interface, and how to run it on an implementation of that interface: what
/// `@RPCInterface` writes for each method of the protocol (its static `rpcImplementations`). It is rpcd's one
/// method declaration (`RPCMethod`) on the params' text, the same type as a module's methods
/// (`RPCModuleMethod`), so a module serves an interface's methods as they are; independent of the module ABI,
/// so it can be run in-process too.
public typealias RPCMethodImplementation<Implementation> = RPCMethod<Implementation, RPCParamsText>

extension RPCMethod where Input == RPCParamsText {
    /// A declared method whose implementation may suspend: each call's params are bound to `descriptor.params`
    /// (or, with `paramsList`, taken as a list by position: a method whose one parameter is an array declared
    /// with `@RPCMethod(paramsList: true)`, whose descriptor lists no parameters), and `invoke` decodes each
    /// argument (`RPCArguments`) and calls the implementation.
    public init(
        _ descriptor: RPCMethodDescriptor, paramsList: Bool = false,
        invoke: @escaping @Sendable (Target, RPCArguments) async throws -> [UInt8]
    ) {
        let binding = RPCArguments.Binding(descriptor, paramsList: paramsList)
        self.init(binding.descriptor, body: .suspending { target, input in try await invoke(target, try binding.arguments(input)) })
    }

    /// The same for an implementation whose method does not suspend (the `Sync` protocol's): the SDK calls it
    /// straight on the calling thread, without making a task.
    public init(
        _ descriptor: RPCMethodDescriptor, paramsList: Bool = false,
        invokeNow: @escaping @Sendable (Target, RPCArguments) throws -> [UInt8]
    ) {
        let binding = RPCArguments.Binding(descriptor, paramsList: paramsList)
        self.init(binding.descriptor, body: .now { target, input in try invokeNow(target, try binding.arguments(input)) })
    }
}
