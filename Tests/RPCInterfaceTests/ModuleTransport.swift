import RPCCore
import RPCInterface
import RPCModuleSDK

/// Serves module instances in-process, the way rpcd would route to them: `SERVICE.METHOD` runs the module's
/// method through the SDK (`RPCModuleMethod.call`: the same binding, checks and error mapping), and
/// `rpc.discover` is rpcd's own document (`OpenRPCDocument`) for the modules' descriptors. No sockets, so a
/// proxy and a module from one protocol meet in a unit test.
struct ModuleTransport: RPCProxyTransport {
    private let routes: [String: @Sendable (JSONValue) async -> RPCModuleReply]
    private let descriptors: [RPCServiceDescriptor]

    init() {
        routes = [:]
        descriptors = []
    }

    private init(routes: [String: @Sendable (JSONValue) async -> RPCModuleReply], descriptors: [RPCServiceDescriptor]) {
        self.routes = routes
        self.descriptors = descriptors
    }

    /// Adds `module` as service `service` (default: the module's name).
    func serving<Module: RPCModule>(_ module: Module, as service: String? = nil) -> ModuleTransport {
        let service = service ?? Module.name
        var routes = self.routes
        for method in Module.methods {
            routes[service + "." + method.name] = { params in await method.call(module, params: params) }
        }
        let descriptor = RPCServiceDescriptor(
            name: service, version: Module.version, summary: Module.summary,
            methods: Module.methods.map(\.descriptor))
        return ModuleTransport(routes: routes, descriptors: descriptors + [descriptor])
    }

    func callForProxy(_ method: String, params: JSONValue) async throws -> JSONValue {
        if method == "rpc.discover" { return OpenRPCDocument.make(for: descriptors) }
        guard let route = routes[method] else { throw RPCError.methodNotFound(method) }
        switch await route(params) {
        case .result(let value): return value
        case .error(let error): throw error
        }
    }
}
