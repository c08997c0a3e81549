import CRPCDModule
import RPCJSON
import RPCProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The Swift version this module was built with, as a C string, exported for rpcd to compare with the Swift
/// runtime it runs before calling anything else in the module (`RPCSwiftVersion`). Defined by the SDK: module
/// authors do nothing.
@_cdecl("rpcd_module_swift_version")
public func rpcdModuleSwiftVersion() -> UnsafePointer<CChar> {
    UnsafeRawPointer(RPCSwiftVersion.compiled.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// Turns an `RPCModule` type into the C descriptor rpcd loads.
///
/// The module's shared library exports the entry point with one line:
///
/// ```swift
/// @_cdecl("rpcd_module_entry_v1")
/// public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(Calc.self) }
/// ```
public enum RPCModuleExport {
    /// The address of the module's `rpcd_module` descriptor (a `const rpcd_module *` for C).
    ///
    /// Built on the first call for each type and then returned again unchanged; it and every string it
    /// points to are allocated once and never freed, as the ABI requires (rpcd never unloads modules). One
    /// image can export up to eight module types this way (normally it exports one; tests may use more); the
    /// init of any further one fails with a reason saying so.
    public static func entry<M: RPCModule>(_ type: M.Type) -> UnsafeRawPointer {
        UnsafeRawPointer(ModuleRegistry.shared.descriptor(for: type))
    }

    /// Problems rpcd would refuse the module for (invalid or duplicate names, a missing version), as
    /// sentences; empty when the module is fine. rpcd applies the same rules when it loads the module, so
    /// call this from the module's own tests to find out earlier.
    public static func problems<M: RPCModule>(of type: M.Type) -> [String] {
        var problems: [String] = []
        if !ServiceName.isValid(M.name) {
            problems.append("module name '\(M.name)' is not \(ServiceName.rule)")
        }
        if M.version.isEmpty { problems.append("module version is empty") }
        var methodNames: Set<String> = []
        var eventNames: Set<String> = []
        for method in M.methods {
            if !MemberName.isValid(method.name) {
                problems.append("method name '\(method.name)' is not \(MemberName.rule)")
            }
            if !methodNames.insert(method.name).inserted {
                problems.append("method '\(method.name)' is declared twice")
            }
            var paramNames: Set<String> = []
            for param in method.params {
                if !MemberName.isValid(param.name) {
                    problems.append(
                        "parameter '\(param.name)' of '\(method.name)' is not \(MemberName.rule)")
                }
                if !paramNames.insert(param.name).inserted {
                    problems.append("parameter '\(param.name)' of '\(method.name)' is declared twice")
                }
            }
        }
        for event in M.events {
            if !MemberName.isValid(event.name) {
                problems.append("event name '\(event.name)' is not \(MemberName.rule)")
            }
            if !eventNames.insert(event.name).inserted {
                problems.append("event '\(event.name)' is declared twice")
            }
        }
        if let interface = (M.self as? any RPCInterfaceModule.Type)?.rpcInterface {
            let own = M.events.map { RPCEventDescriptor(name: $0.name, summary: $0.summary, schema: $0.schema) }
            if Set(own.map(\.name)) != Set(interface.events.map(\.name))
                || own.contains(where: { event in !interface.events.contains { $0.name == event.name && $0.schema == event.schema } }) {
                problems.append(
                    "events differ from interface '\(interface.service)''s: leave `events` out, the interface's declaration is the module's")
            }
        }
        return problems
    }
}

// MARK: - Type erasure

/// One method of one instance, with the module value captured.
struct BoundMethod: Sendable {
    let name: String
    let mayBlock: Bool
    let run: @Sendable ([UInt8]) async throws -> [UInt8]
    /// Set for bodies that are not `async`: called directly, with no task.
    let runNow: (@Sendable ([UInt8]) throws -> [UInt8])?
}

/// Creates instances of one module type.
struct ModuleFactory: Sendable {
    let make: @Sendable (RPCModuleContext) throws -> (methods: [BoundMethod], shutdown: @Sendable () -> Void)

    init<M: RPCModule>(_ type: M.Type, methods: [RPCModuleMethod<M>]) {
        make = { context in
            let module = try M(context: context)
            let bound = methods.map { method -> BoundMethod in
                var runNow: (@Sendable ([UInt8]) throws -> [UInt8])?
                if let body = method.runNow {
                    runNow = { params in try body(module, RPCParamsText(params)) }
                }
                return BoundMethod(
                    name: method.name, mayBlock: method.mayBlock,
                    run: { params in try await method.run(module, RPCParamsText(params)) }, runNow: runNow)
            }
            return (bound, { module.shutdown() })
        }
    }
}

/// The module types this image has exported, each with its descriptor and its `init` slot.
final class ModuleRegistry: Sendable {
    static let shared = ModuleRegistry()

    struct Entry: @unchecked Sendable {
        let type: ObjectIdentifier
        let descriptor: UnsafePointer<rpcd_module>
        let factory: ModuleFactory
    }

    private let entries = Mutex<[Entry]>([])

    func descriptor<M: RPCModule>(for type: M.Type) -> UnsafePointer<rpcd_module> {
        entries.withLock { entries in
            if let entry = entries.first(where: { $0.type == ObjectIdentifier(type) }) { return entry.descriptor }
            // C function pointers cannot capture which type they belong to; init is told apart by its slot.
            // Past the last slot the module still loads, but every init fails with the reason.
            let initThunk = entries.count < initThunks.count ? initThunks[entries.count] : tooManyTypesInit
            let methods = M.methods
            let descriptor = DescriptorBuilder.build(M.self, methods: methods, initThunk: initThunk)
            entries.append(Entry(type: ObjectIdentifier(type), descriptor: descriptor, factory: ModuleFactory(M.self, methods: methods)))
            return descriptor
        }
    }

    func factory(slot: Int) -> ModuleFactory? {
        entries.withLock { $0.indices.contains(slot) ? $0[slot].factory : nil }
    }
}

// MARK: - The C descriptor

typealias InitFunction = @convention(c) (
    UnsafePointer<rpcd_host>?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    UnsafeMutablePointer<CChar>?, Int
) -> Int32

private let initThunks: [InitFunction] = [
    { ModuleRuntime.initialize(slot: 0, $0, $1, $2, $3, $4) },
    { ModuleRuntime.initialize(slot: 1, $0, $1, $2, $3, $4) },
    { ModuleRuntime.initialize(slot: 2, $0, $1, $2, $3, $4) },
    { ModuleRuntime.initialize(slot: 3, $0, $1, $2, $3, $4) },
    { ModuleRuntime.initialize(slot: 4, $0, $1, $2, $3, $4) },
    { ModuleRuntime.initialize(slot: 5, $0, $1, $2, $3, $4) },
    { ModuleRuntime.initialize(slot: 6, $0, $1, $2, $3, $4) },
    { ModuleRuntime.initialize(slot: 7, $0, $1, $2, $3, $4) },
]

private let tooManyTypesInit: InitFunction = { _, _, _, reason, reasonSize in
    ModuleRuntime.writeReason("this image exports more than 8 module types", to: reason, size: reasonSize)
    return 1
}

enum DescriptorBuilder {
    /// `rpcd_method.errors_json`: each documented error's code and message.
    static func errorsText(_ errors: [RPCError]) -> String {
        JSONValue.array(errors.map { ["code": .number($0.code), "message": .string($0.message)] }).jsonText
    }

    /// Allocates the descriptor, its methods, their params and all strings; nothing of it is ever freed.
    /// Sizes are C's `sizeof`, which is Swift's stride (a struct's size in Swift leaves out tail padding).
    static func build<M: RPCModule>(
        _ type: M.Type, methods: [RPCModuleMethod<M>], initThunk: InitFunction
    ) -> UnsafePointer<rpcd_module> {
        let cMethods = UnsafeMutablePointer<rpcd_method>.allocate(capacity: max(methods.count, 1))
        for (index, method) in methods.enumerated() {
            let cParams = permanentParams(method.params)
            (cMethods + index).initialize(
                to: rpcd_method(
                    struct_size: UInt32(MemoryLayout<rpcd_method>.stride), name: permanent(method.name),
                    summary: permanentOrNull(method.summary), params: cParams,
                    n_params: method.params.count, result_schema_json: method.result.map { permanent($0.schema.jsonText) },
                    flags: (method.mayBlock ? UInt32(RPCD_METHOD_MAY_BLOCK) : 0)
                        | (method.readOnly ? UInt32(RPCD_METHOD_READ_ONLY) : 0)
                        | (method.descriptor.flags.contains(.byPosition) ? UInt32(RPCD_METHOD_BY_POSITION) : 0)
                        | (method.descriptor.flags.contains(.anyParams) ? UInt32(RPCD_METHOD_ANY_PARAMS) : 0),
                    errors_json: method.errors.isEmpty ? nil : permanent(errorsText(method.errors)),
                    result_name: method.result.map { permanent($0.name) }))
        }
        let module = UnsafeMutablePointer<rpcd_module>.allocate(capacity: 1)
        module.initialize(to: rpcd_module())
        module.pointee.abi_version = UInt32(RPCD_MODULE_ABI_VERSION)
        module.pointee.struct_size = UInt32(MemoryLayout<rpcd_module>.stride)
        module.pointee.name = permanent(M.name)
        module.pointee.version = permanent(M.version)
        module.pointee.description = permanent(M.summary)
        module.pointee.methods = UnsafePointer(cMethods)
        module.pointee.n_methods = methods.count
        module.pointee.`init` = initThunk
        module.pointee.call = { instance, index, params, length, call in
            ModuleRuntime.call(instance, index, params, length, call)
        }
        module.pointee.`deinit` = { instance in ModuleRuntime.deinitialize(instance) }
        let events = M.events
        if !events.isEmpty {
            let cEvents = UnsafeMutablePointer<rpcd_event>.allocate(capacity: events.count)
            for (index, event) in events.enumerated() {
                (cEvents + index).initialize(
                    to: rpcd_event(
                        struct_size: UInt32(MemoryLayout<rpcd_event>.stride), name: permanent(event.name),
                        summary: permanentOrNull(event.summary), schema_json: schemaText(event.schema)))
            }
            module.pointee.events = UnsafePointer(cEvents)
            module.pointee.n_events = events.count
        }
        if let keys = M.configKeys {
            let cKeys = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: keys.count + 1)
            for (index, key) in keys.enumerated() { (cKeys + index).initialize(to: permanent(key)) }
            (cKeys + keys.count).initialize(to: nil)
            module.pointee.config_keys = UnsafePointer(cKeys)
        }
        // Every [Config] key is optional: its absence is the module's default.
        let config = M.config.map { param in
            var optional = param
            optional.optional = true
            return optional
        }
        module.pointee.config_params = permanentParams(config)
        module.pointee.n_config_params = config.count
        // An older rpcd never reads past the fields it knows, so it never calls this.
        module.pointee.cancel = { instance, call in ModuleRuntime.cancel(instance, call) }
        return UnsafePointer(module)
    }

    /// `params` as a C array that lives as long as the process; nil for none.
    private static func permanentParams(_ params: [RPCParam]) -> UnsafePointer<rpcd_param>? {
        guard !params.isEmpty else { return nil }
        let array = UnsafeMutablePointer<rpcd_param>.allocate(capacity: params.count)
        for (index, param) in params.enumerated() {
            (array + index).initialize(
                to: rpcd_param(
                    name: permanent(param.name), schema_json: schemaText(param.schema),
                    summary: permanentOrNull(param.summary), flags: param.optional ? UInt32(RPCD_PARAM_OPTIONAL) : 0))
        }
        return UnsafePointer(array)
    }

    private static func permanent(_ text: String) -> UnsafePointer<CChar> {
        UnsafePointer(strdup(text)!)
    }

    private static func permanentOrNull(_ text: String) -> UnsafePointer<CChar>? {
        text.isEmpty ? nil : permanent(text)
    }

    /// A parameter's schema: NULL for the empty schema (any value), as the header spells it; else the compact
    /// JSON text. (A result's `{}` stays "{}": there NULL means "not described".)
    private static func schemaText(_ schema: JSONValue) -> UnsafePointer<CChar>? {
        schema == [:] ? nil : permanent(schema.jsonText)
    }
}

// MARK: - init, call, deinit

enum ModuleRuntime {
    static func initialize(
        slot: Int, _ host: UnsafePointer<rpcd_host>?, _ handler: OpaquePointer?,
        _ instance: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ reason: UnsafeMutablePointer<CChar>?,
        _ reasonSize: Int
    ) -> Int32 {
        if let problem = HandlerLink.problem(with: host) {
            writeReason(problem, to: reason, size: reasonSize)
            return 1
        }
        guard let host, let instance else {
            writeReason("the host passed no instance pointer", to: reason, size: reasonSize)
            return 1
        }
        guard let factory = ModuleRegistry.shared.factory(slot: slot) else {
            writeReason("module slot \(slot) is not registered", to: reason, size: reasonSize)
            return 1
        }
        let link = HandlerLink(host: host, handler: handler)
        do {
            let made = try factory.make(RPCModuleContext(link: link))
            let box = InstanceBox(link: link, methods: made.methods, shutdown: made.shutdown)
            instance.pointee = Unmanaged.passRetained(box).toOpaque()
            return 0
        } catch {
            link.close()
            // A thrown RPCError's message is the sentence the module chose; its code means nothing to an init.
            writeReason((error as? RPCError)?.message ?? String(describing: error), to: reason, size: reasonSize)
            return 1
        }
    }

    static func call(
        _ instance: UnsafeMutableRawPointer?, _ index: Int, _ params: UnsafePointer<CChar>?, _ length: Int,
        _ call: OpaquePointer?
    ) {
        // Without an instance there is no host table to answer through; the host's timeout covers it.
        guard let instance, let call else { return }
        let box = Unmanaged<InstanceBox>.fromOpaque(instance).takeUnretainedValue()
        // params_json is valid only during this call: copy it.
        let bytes: [UInt8] =
            if let params, length > 0 { Array(UnsafeRawBufferPointer(start: params, count: length)) } else { [] }
        box.start(index, bytes, CallHandle(pointer: call))
    }

    /// The caller of `call` gave up: its task, if its body is async and still running, is cancelled.
    static func cancel(_ instance: UnsafeMutableRawPointer?, _ call: OpaquePointer?) {
        guard let instance, let call else { return }
        Unmanaged<InstanceBox>.fromOpaque(instance).takeUnretainedValue().cancel(CallHandle(pointer: call))
    }

    static func deinitialize(_ instance: UnsafeMutableRawPointer?) {
        guard let instance else { return }
        Unmanaged<InstanceBox>.fromOpaque(instance).takeRetainedValue().close()
    }

    /// Copies `text` into the host's buffer, NUL-terminated, cut at a UTF-8 character boundary if needed.
    static func writeReason(_ text: String, to buffer: UnsafeMutablePointer<CChar>?, size: Int) {
        guard let buffer, size > 0 else { return }
        var bytes = Array(text.utf8)
        if bytes.count > size - 1 {
            var cut = size - 1
            while cut > 0 && bytes[cut] & 0xC0 == 0x80 { cut -= 1 }
            bytes.removeSubrange(cut...)
        }
        for (offset, byte) in bytes.enumerated() { buffer[offset] = CChar(bitPattern: byte) }
        buffer[bytes.count] = 0
    }
}

/// The state behind one `void *instance`: the host link, the bound methods and the calls in flight.
final class InstanceBox: @unchecked Sendable {
    let link: HandlerLink
    let methods: [BoundMethod]
    let shutdown: @Sendable () -> Void

    /// Calls whose async body has not finished, by their `rpcd_call *` (unique while the call is open), for
    /// cancellation by the host and at deinit.
    private struct InFlight {
        var running: [UInt: Running] = [:]
    }

    private enum Running {
        /// The task is being created; `cancelled` when the host cancelled the call meanwhile.
        case starting(cancelled: Bool)
        case task(Task<Void, Never>)
    }

    private let inFlight = Mutex(InFlight())

    init(link: HandlerLink, methods: [BoundMethod], shutdown: @escaping @Sendable () -> Void) {
        self.link = link
        self.methods = methods
        self.shutdown = shutdown
    }

    /// Starts one call and returns: at once for ordinary methods, after the body has finished for
    /// `mayBlock` ones (which run on the calling worker thread).
    func start(_ index: Int, _ params: [UInt8], _ call: CallHandle) {
        guard methods.indices.contains(index) else {
            link.reply(call, .error(.methodNotFound("method #\(index)"), logged: nil))
            return
        }
        let method = methods[index]
        if let runNow = method.runNow {
            // Not async: a plain call on this thread, answered before `call` returns.
            finish(method, CallOutcome.runNow { try runNow(params) }, call)
            return
        }
        let executor = method.mayBlock ? CallerThreadExecutor() : nil
        let id = UInt(bitPattern: call.pointer)
        inFlight.withLock { $0.running[id] = .starting(cancelled: false) }
        // The body starts right here, on the calling thread (an event loop, or for `mayBlock` methods a worker),
        // and runs until it first suspends: a method that never suspends answers without a thread hop or an
        // enqueue. Only what follows a suspension runs elsewhere (Swift's pool, or the worker's executor).
        let task = Task.immediate(executorPreference: executor) { [self] in
            await execute(method, params, call)
            inFlight.withLock { _ = $0.running.removeValue(forKey: id) }
            executor?.taskEnded()
        }
        let cancelledMeanwhile = inFlight.withLock { state -> Bool in
            guard case .starting(let cancelled)? = state.running[id] else { return false }  // finished already
            state.running[id] = .task(task)
            return cancelled
        }
        if cancelledMeanwhile { task.cancel() }
        executor?.drain()
    }

    /// Cancels the task of `call`, now or, if it is being created, as soon as it is known. A call whose body
    /// is not async, or has finished, has nothing to cancel.
    func cancel(_ call: CallHandle) {
        let task = inFlight.withLock { state -> Task<Void, Never>? in
            switch state.running[UInt(bitPattern: call.pointer)] {
            case .task(let task)?: return task
            case .starting?:
                state.running[UInt(bitPattern: call.pointer)] = .starting(cancelled: true)
                return nil
            case nil: return nil
            }
        }
        task?.cancel()
    }

    private func execute(_ method: BoundMethod, _ bytes: [UInt8], _ call: CallHandle) async {
        let outcome = await CallOutcome.run { try await method.run(bytes) }
        // A cancelled body usually ends by throwing CancellationError: its answer is dropped by the host, and it
        // is no internal error worth logging.
        finish(method, outcome, call, log: !Task.isCancelled)
    }

    private func finish(_ method: BoundMethod, _ outcome: CallOutcome, _ call: CallHandle, log: Bool = true) {
        if log, case .error(_, let logged?) = outcome {
            link.log(.error, "Method failed with an internal error", ["METHOD": method.name, "RPCD_ERROR": logged])
        }
        link.reply(call, outcome)
    }

    /// deinit: let the module clean up, cut the link so nothing logs through a handler handle the host is
    /// about to free, then cancel what still runs (those calls have timed out for their clients; their late
    /// answers are dropped by the host).
    func close() {
        shutdown()
        link.close()
        let running = inFlight.withLock { state in
            state.running.values.compactMap { running -> Task<Void, Never>? in
                if case .task(let task) = running { task } else { nil }
            }
        }
        for task in running { task.cancel() }
    }
}
