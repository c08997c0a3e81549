import CRPCDModule
package import Logging
package import NIOCore
package import RPCBinding
import RPCLogging
import RPCProtocol
import Synchronization

/// One handler's module instance: its `init` and `deinit`, and the calls that enter it, wherever it runs (in
/// rpcd's own process behind `ModuleService`, or in a module host process behind `ModuleHostServer`).
///
/// Calls to methods without `RPCD_METHOD_MAY_BLOCK` enter the module on the connection's event loop; the
/// others on the shared worker pool. `MaxConcurrency=` bounds the calls inside the module (past it callers
/// get -32004 at once), `Timeout=` answers callers with -32003 while the module keeps its slot until it
/// answers. A cancelled call (`rpc.cancel`, its connection closed) gives its slot back at once, and the module
/// is told (`rpcd_module.cancel`, `rpcd_host.call_cancelled`). After `retire()` the instance is de-initialised
/// once the module has answered its last call, cancelled or not: a reload never pulls an instance out from
/// under a running call. Thread-safe.
package final class ModuleInstance: Sendable {
    package let descriptor: RPCServiceDescriptor
    /// Each method's full name (`calc.add`), by index: made once, not per call.
    package let methodNames: [String]
    package let configuration: HandlerConfiguration
    package let image: ModuleImage
    package let logger: Logger
    private let context: HandlerContext
    /// The token the module holds as its `rpcd_handler *`: registered before `init`, removed after `deinit`.
    package let handlerToken: UInt
    private let instance: InstancePointer
    private let pool: WorkerPool
    private let state = Mutex(State())
    /// Which methods without `RPCD_METHOD_MAY_BLOCK` blocked their event loop: each is reported once.
    private let loopBlocks = LoopBlockWatch()

    private struct State {
        /// Calls counted against `MaxConcurrency=`: admitted and neither answered by the module nor cancelled.
        var admitted = 0
        /// Calls the module has not answered (cancelled ones included), and cancel() callbacks running: the
        /// instance lives while this is not 0.
        var outstanding = 0
        var retired = false
        var deinitialized = false
    }

    /// The module's `void *instance`, only ever passed back to the module.
    private struct InstancePointer: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer?
    }

    /// Creates the instance with the module's `init`. Throws `ModuleLoadError` with the module's reason.
    /// `publish` receives each event the module emits and rpcd accepts (declared, one JSON value), by full name,
    /// from its `init` on.
    package init(
        image: ModuleImage, configuration: HandlerConfiguration, pool: WorkerPool, logger: Logger,
        publish: @escaping @Sendable (String, ByteBuffer) -> Void
    ) throws(ModuleLoadError) {
        // Before any of the handler's code runs, in rpcd or in a module host alike.
        try image.checkConfig(of: configuration)
        let service = configuration.service ?? image.name
        var logger = logger
        logger[metadataKey: LogField.service] = "\(service)"
        logger[metadataKey: LogField.module] = "\(image.path.split(separator: "/").last ?? "")"
        self.logger = logger
        self.image = image
        self.configuration = configuration
        self.pool = pool
        self.descriptor = RPCServiceDescriptor(
            name: service, version: image.version, summary: image.summary, methods: image.methods, events: image.events)
        self.methodNames = image.methods.map { service + "." + $0.name }
        self.context = HandlerContext(
            logger: logger, config: configuration.config, stateDirectory: configuration.sandbox.stateDirectory, service: service,
            events: image.events, publish: publish)
        self.handlerToken = HandlerContext.handles.insert(context)

        var instance: UnsafeMutableRawPointer?
        var error = [CChar](repeating: 0, count: 512)
        let status = image.module.`init`!(HostFunctions.table, OpaquePointer(bitPattern: handlerToken), &instance, &error, error.count)
        guard status == 0 else {
            _ = HandlerContext.handles.remove(handlerToken)
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw ModuleLoadError(image.path, "init failed for handler '\(configuration.name)': \(reason.isEmpty ? "status \(status)" : reason)")
        }
        self.instance = InstancePointer(pointer: instance)
    }

    /// Runs `call` in the module and hands its outcome to `answer`, once; `onCancel` registers what runs when
    /// the caller gives up (the router's cancellation, for a call routed in rpcd: `ModuleService`).
    package func enter(_ call: ModuleCall, answer: any ModuleCallAnswer, onCancel: (@escaping () -> Void) -> Void) {
        guard let (pending, token) = admit(call, answer: answer, key: nil) else { return }
        onCancel { [self] in cancel(pending, token: token) }
        run(call, pending, token: token)
    }

    /// Runs `call` as `enter(_:answer:onCancel:)` does, for a caller that knows it by `key` (the link's token of
    /// the call, in a module host: `ModuleHostServer`) and names it by that key if it gives up
    /// (`cancel(key:)`): nothing is registered per call for a cancellation that nearly never comes. A key must
    /// not be reused while its call is open: such a call is refused (-32603).
    package func enter(_ call: ModuleCall, answer: any ModuleCallAnswer, key: UInt64) {
        guard let (pending, token) = admit(call, answer: answer, key: key) else { return }
        run(call, pending, token: token)
    }

    /// The caller of the call entered with `key` gave up: as `enter(_:answer:onCancel:)`'s registered
    /// cancellation. Nothing happens when no such call is open (the module answered it already).
    package func cancel(key: UInt64) {
        guard let (pending, token) = ModuleCallTable.shared.call(forKey: key) else { return }
        cancel(pending, token: token)
    }

    /// Admits `call`, or answers it at once (params that do not bind, no slot under `MaxConcurrency=`, a retired
    /// instance): the call's state and its token, registered (under `key`'s token, when given), its
    /// `Timeout=` armed.
    private func admit(_ call: ModuleCall, answer: any ModuleCallAnswer, key: UInt64?) -> (PendingModuleCall, UInt)? {
        // RPCD_METHOD_BIND_PARAMS: wrong params are answered here, before they take a slot or reach the module.
        let bound: BoundCallParams?
        do {
            bound = try bind(call)
        } catch {
            answer.fail(error as? RPCError ?? RPCError.internalError)
            return nil
        }
        let admitted = state.withLock { state -> Bool in
            guard !state.deinitialized, state.admitted < configuration.maxConcurrency else { return false }
            state.admitted += 1
            state.outstanding += 1
            return true
        }
        guard admitted else {
            let deinitialized = state.withLock { $0.deinitialized }
            answer.fail(deinitialized ? RPCError.serviceUnavailable(descriptor.name) : RPCError.serviceBusy(descriptor.name))
            return nil
        }
        let pending = PendingModuleCall(answer: answer, instance: self, method: call.name, boundParams: bound)
        let token: UInt
        if let key {
            guard let keyed = ModuleCallTable.shared.register(pending, key: key) else {
                logger.error(
                    "A call came with the key of a call still open; refused", metadata: [LogField.method: "\(call.name)"])
                moduleCallFinished(releasingSlot: true)
                answer.fail(RPCError.internalError)
                return nil
            }
            token = keyed
        } else {
            token = ModuleCallTable.shared.register(pending)
        }
        if let timeout = configuration.timeout {
            pending.armTimeout(on: call.eventLoop, after: timeout) { [self] in tellModuleCancelled(token) }
        }
        return (pending, token)
    }

    /// The caller of `pending` gave up: its slot is free, and the module is told unless it has answered.
    private func cancel(_ pending: PendingModuleCall, token: UInt) {
        guard pending.cancel() else { return }
        tellModuleCancelled(token)
    }

    /// Hands `call`, admitted as `token`, to the module: on the calling thread, or on the worker pool for a
    /// method with `RPCD_METHOD_MAY_BLOCK`.
    private func run(_ call: ModuleCall, _ pending: PendingModuleCall, token: UInt) {
        let index = call.methodIndex
        let params = call.params
        let bound = pending.boundParams
        let callModule: @Sendable () -> Void = { [instance, image] in
            let handle = OpaquePointer(bitPattern: token)
            if let bound {
                image.module.call(instance.pointer, index, bound.array.baseAddress, bound.array.count, handle)
            } else if let params {
                params.withUnsafeReadableBytes { bytes in
                    image.module.call(instance.pointer, index, bytes.baseAddress, bytes.count, handle)
                }
            } else {
                image.module.call(instance.pointer, index, nil, 0, handle)
            }
        }
        if descriptor.methods[index].flags.contains(.mayBlock) {
            pool.submit { workState in
                if pending.isCancelled {
                    // Cancelled or timed out while it waited for a worker: the module never sees it.
                    ModuleCallTable.shared.complete(OpaquePointer(bitPattern: token), .failure(RPCError.callCancelled))
                } else if workState == .active {
                    callModule()
                } else {
                    ModuleCallTable.shared.complete(OpaquePointer(bitPattern: token), .failure(RPCError.shuttingDown))
                }
            }
        } else {
            if let held = loopBlocks.run(method: index, callModule) { reportBlockedLoop(call, held: held) }
        }
    }

    /// Logs, once per method of this handler, that the method blocked its event loop (`LoopBlockWatch`): the
    /// administrator and the module's author see which method lacks the flag, not only "Slow call".
    private func reportBlockedLoop(_ call: ModuleCall, held: Duration) {
        let micros = held.components.seconds * 1_000_000 + held.components.attoseconds / 1_000_000_000_000
        logger.warning(
            "Method blocked its event loop and lacks RPCD_METHOD_MAY_BLOCK (mayBlock: true in Swift); other connections on the loop waited",
            metadata: [LogField.method: "\(call.name)", LogField.durationMicroseconds: "\(micros)"])
    }

    /// The call's params bound for its method, when it has `RPCD_METHOD_BIND_PARAMS`; -32602 when they break
    /// the binding rules.
    private func bind(_ call: ModuleCall) throws -> BoundCallParams? {
        guard let binder = image.binders[call.methodIndex] else { return nil }
        guard let params = call.params else { return try BoundCallParams(nil, binder: binder) }
        return try params.withUnsafeReadableBytes { try BoundCallParams($0, binder: binder) }
    }

    /// Stops this instance once nothing runs in it any more (now, if nothing does).
    package func retire() {
        let deinitNow = state.withLock { state -> Bool in
            state.retired = true
            guard state.outstanding == 0, !state.deinitialized else { return false }
            state.deinitialized = true
            return true
        }
        if deinitNow { deinitialize() } else { logger.info("Handler retired; waiting for calls in flight") }
    }

    /// The module's `cancel` for the call `token`, if it has one and has not answered the call yet. The
    /// instance is held meanwhile, so a retire cannot de-initialise it under the callback.
    private func tellModuleCancelled(_ token: UInt) {
        guard let cancel = image.module.cancel, ModuleCallTable.shared.isOpen(token) else { return }
        let held = state.withLock { state -> Bool in
            guard !state.deinitialized else { return false }
            state.outstanding += 1
            return true
        }
        guard held else { return }
        cancel(instance.pointer, OpaquePointer(bitPattern: token))
        moduleCallFinished(releasingSlot: false)
    }

    /// A slot under `MaxConcurrency=` is free again: its call was answered by the module or cancelled.
    func releaseSlot() {
        state.withLock { $0.admitted -= 1 }
    }

    /// The module answered a call (or a cancel() callback returned); `releasingSlot` when the call still held
    /// its `MaxConcurrency=` slot.
    func moduleCallFinished(releasingSlot: Bool) {
        let deinitNow = state.withLock { state -> Bool in
            if releasingSlot { state.admitted -= 1 }
            state.outstanding -= 1
            guard state.retired, state.outstanding == 0, !state.deinitialized else { return false }
            state.deinitialized = true
            return true
        }
        if deinitNow { deinitialize() }
    }

    private func deinitialize() {
        image.module.deinit?(instance.pointer)
        _ = HandlerContext.handles.remove(handlerToken)
        logger.notice("Handler stopped", metadata: [LogField.handler: "\(configuration.name)"])
    }

    /// Calls inside the module right now, cancelled ones included until the module answers them (for
    /// `rpcd.info` and tests).
    package var callsInModule: Int { state.withLock { $0.outstanding } }
    /// Calls counted against `MaxConcurrency=` right now (for tests).
    package var callsHoldingSlots: Int { state.withLock { $0.admitted } }
    package var isDeinitialized: Bool { state.withLock { $0.deinitialized } }
}
