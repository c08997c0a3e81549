package import Logging
import NIOCore
package import RPCBinding
package import RPCCore
package import RPCModuleHost

/// One handler whose module runs in rpcd's own process (`Isolation=none`), as an `RPCService`: the router's
/// calls enter its `ModuleInstance` on the connection's loop (or the worker pool), and the module's answer
/// completes the call's `RPCResponder`. Its events go to the daemon's `RPCEventHub`. Thread-safe.
package final class ModuleService: HandlerService, Sendable {
    /// The module instance: its limits, its calls in flight, its life.
    package let instance: ModuleInstance
    package let descriptor: RPCServiceDescriptor

    /// Creates the instance with the module's `init`. Throws `ModuleLoadError` with the module's reason.
    /// The instance's events go to `events`, from its `init` on.
    package init(
        image: ModuleImage, configuration: HandlerConfiguration, pool: WorkerPool, logger: Logger,
        events: RPCEventHub = RPCEventHub()
    ) throws(ModuleLoadError) {
        self.instance = try ModuleInstance(image: image, configuration: configuration, pool: pool, logger: logger) {
            event, payload in
            events.publish(event, payload: payload)
        }
        self.descriptor = instance.descriptor
    }

    package var configuration: HandlerConfiguration { instance.configuration }
    package var image: ModuleImage { instance.image }
    package var logger: Logger { instance.logger }

    package func handle(_ call: RPCCall, responder: RPCResponder) {
        let moduleCall = ModuleCall(
            methodIndex: call.methodIndex, name: call.request.method, params: call.params, eventLoop: call.eventLoop)
        instance.enter(moduleCall, answer: responder, onCancel: call.onCancel)
    }

    package func retire() {
        instance.retire()
    }
}

/// The router's responder takes a module's answer as it is.
extension RPCResponder: ModuleCallAnswer {}
