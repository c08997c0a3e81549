package import NIOCore
import RPCProtocol

/// One call into a module instance (`ModuleInstance.enter`), as whoever serves the instance hands it over:
/// rpcd's router for an in-process handler (`ModuleService`), the link for a module host process
/// (`ModuleHostServer`). Only what the module and the instance's limits need: who called, and through which
/// connection, stays with the caller (rpcd checked access before the call got here).
package struct ModuleCall: Sendable {
    /// Index of the method in the instance's descriptor (the module's method table); in range.
    package var methodIndex: Int
    /// The method's full name (`calc.add`), for what the instance logs about the call.
    package var name: String
    /// The params as raw JSON bytes, as received; nil when the request had none.
    package var params: ByteBuffer?
    /// The caller's loop: `Timeout=` runs on it, and a method without `RPCD_METHOD_MAY_BLOCK` runs on it now.
    package var eventLoop: any EventLoop

    package init(methodIndex: Int, name: String, params: ByteBuffer?, eventLoop: any EventLoop) {
        self.methodIndex = methodIndex
        self.name = name
        self.params = params
        self.eventLoop = eventLoop
    }
}

/// Where a module call's outcome goes, at most once (`PendingModuleCall` makes sure): rpcd's `RPCResponder` for
/// an in-process handler, a link message for a module host process. Called from any thread.
package protocol ModuleCallAnswer: Sendable {
    /// The result, one JSON value the module's bytes were checked to be.
    func succeed(rawJSON: ByteBuffer)
    /// The call failed; an error that is not an `RPCError` reaches the caller as -32603.
    func fail(_ error: any Error)
    /// The module answered a call whose caller was answered already (it gave up, or `Timeout=` passed): the
    /// answer is dropped, but whoever keeps the call on its books until the module is done with it learns
    /// that it is. Default: nothing.
    func moduleFinishedAbandonedCall()
}

extension ModuleCallAnswer {
    package func moduleFinishedAbandonedCall() {}
}
