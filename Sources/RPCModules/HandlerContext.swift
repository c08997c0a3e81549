import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What an `rpcd_handler *` points to: the handler's logger and its `[Config]` values as C strings.
/// The strings live as long as the context, which outlives the module instance (see `ModuleService`).
final class HandlerContext: @unchecked Sendable {
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

    /// The opaque handle handed to the module; valid while this object is alive.
    var handle: OpaquePointer {
        OpaquePointer(Unmanaged.passUnretained(self).toOpaque())
    }
}
