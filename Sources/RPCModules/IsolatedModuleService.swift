import Logging
import NIOCore
package import RPCBinding
package import RPCCore
package import RPCJSON
package import RPCModuleHost

/// One handler whose module runs in a module host process (`Isolation=process`), as an `RPCService`: the
/// descriptor the host reported at its first start, and the supervisor that forwards calls to the host and
/// keeps a host running (`ModuleHostSupervisor`). Calls cross the link; a crash or hang of the module is this
/// handler's alone. Thread-safe.
package final class IsolatedModuleService: HandlerService, RPCServiceStatusReporting, Sendable {
    package let descriptor: RPCServiceDescriptor
    package var configuration: HandlerConfiguration { supervisor.configuration }
    let supervisor: ModuleHostSupervisor
    /// The module file as it was when the host was started: a reload keeps this instance while it is the same.
    let moduleIdentity: FileIdentity?

    /// Waits until the supervisor's first host serves (`launchFirst`). Blocks; call it off the event loops.
    init(
        supervisor: ModuleHostSupervisor, firstStart: EventLoopFuture<RPCServiceDescriptor>, moduleIdentity: FileIdentity?
    ) throws(ModuleLoadError) {
        self.supervisor = supervisor
        self.moduleIdentity = moduleIdentity
        do {
            self.descriptor = try firstStart.wait()
        } catch {
            throw ModuleLoadError(supervisor.modulePath, "\(error)")
        }
    }

    package func handle(_ call: RPCCall, responder: RPCResponder) {
        supervisor.handle(call, responder: responder, service: descriptor.name)
    }

    package func retire() {
        supervisor.retire()
    }

    /// The host's state and its crash, hang and restart counts (`rpcd.info`).
    package var status: JSONValue { supervisor.status }
}
