import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What an `rpcd_handler *` stands for: the handler's logger and its `[Config]` values as C strings.
///
/// The module gets a token from `handles`, not a pointer: the handle is valid from the instance's `init` until
/// its `deinit` has returned (`ModuleService` registers and removes it), and a module thread that logs through
/// it later is ignored rather than reaching freed memory. The strings live as long as the context.
final class HandlerContext: @unchecked Sendable {
    /// Every live handler's context, by the token its module holds.
    static let handles = OpaqueHandleTable<HandlerContext>()

    let logger: Logger
    private let config: [String: UnsafeMutablePointer<CChar>]

    init(logger: Logger, config: [String: String]) {
        self.logger = logger
        self.config = config.mapValues { strdup($0)! }
    }

    deinit {
        for value in config.values { free(value) }
    }

    func configValue(_ key: String) -> UnsafePointer<CChar>? {
        config[key].map { UnsafePointer($0) }
    }

    /// The context behind a handle a module passed back, if that handler still lives.
    static func of(_ handle: OpaquePointer?) -> HandlerContext? {
        handles.value(for: UInt(handle: handle))
    }
}
