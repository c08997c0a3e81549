import Logging
import NIOCore
import RPCBinding
import RPCLogging

#if canImport(Glibc)
import Glibc
#endif

/// What an `rpcd_handler *` stands for: the handler's logger, its `[Config]` values and state directory as C
/// strings, and where its events go.
///
/// The module gets a token from `handles`, not a pointer: the handle is valid from the instance's `init` until
/// its `deinit` has returned (`ModuleInstance` registers and removes it), and a module thread that logs through
/// it later is ignored rather than reaching freed memory. The strings live as long as the context.
final class HandlerContext: @unchecked Sendable {
    /// Every live handler's context, by the token its module holds.
    static let handles = OpaqueHandleTable<HandlerContext>()

    let logger: Logger
    private let config: [String: UnsafeMutablePointer<CChar>]
    /// `StateDirectory=`'s path (`host->state_directory`); nil when the handler has none.
    let stateDirectory: UnsafeMutablePointer<CChar>?
    /// Where an accepted event goes: rpcd's event hub, or the link to rpcd in a module host process.
    private let publish: @Sendable (String, ByteBuffer) -> Void
    /// The full name (`kv.changed`) of each declared event, by the name the module emits it as (`changed`).
    private let events: [String: String]

    init(
        logger: Logger, config: [String: String], stateDirectory: String? = nil, service: String,
        events: [RPCEventDescriptor], publish: @escaping @Sendable (String, ByteBuffer) -> Void
    ) {
        self.logger = logger
        self.config = config.mapValues { strdup($0)! }
        self.stateDirectory = stateDirectory.map { strdup($0)! }
        self.publish = publish
        self.events = Dictionary(uniqueKeysWithValues: events.map { ($0.name, service + "." + $0.name) })
    }

    /// Refused emits are logged, at most ten a second: a module emitting wrongly in a loop must not flood the
    /// journal.
    private let refusedEmits = LogRateLimiter(burst: 10, per: .seconds(1))

    /// `host->emit`: publishes a declared event whose payload is one JSON value; false otherwise (the module is
    /// told with -1, and the refusal is logged: whoever runs a module that emits wrongly should hear of it).
    func emit(_ event: String, payload: UnsafeRawBufferPointer) -> Bool {
        guard let fullName = events[event] else {
            logRefusedEmit("Module emitted an event it does not declare; dropped", event: event)
            return false
        }
        guard JSONValidation.isSingleValue(payload) else {
            logRefusedEmit("Module emitted an event whose payload is not one JSON value; dropped", event: fullName)
            return false
        }
        publish(fullName, ByteBuffer(bytes: payload))
        return true
    }

    deinit {
        for value in config.values { free(value) }
        free(stateDirectory)
    }

    private func logRefusedEmit(_ message: Logger.Message, event: String) {
        guard let suppressed = refusedEmits.admit() else { return }
        var metadata: Logger.Metadata = [LogField.event: "\(event)"]
        if suppressed > 0 { metadata[LogField.suppressed] = "\(suppressed)" }
        logger.warning(message, metadata: metadata)
    }

    func configValue(_ key: String) -> UnsafePointer<CChar>? {
        config[key].map { UnsafePointer($0) }
    }

    /// The context behind a handle a module passed back, if that handler still lives.
    static func of(_ handle: OpaquePointer?) -> HandlerContext? {
        handles.value(for: UInt(handle: handle))
    }
}
