import Logging
import RPCConfig
import RPCCore
import RPCLogging
import RPCModules
import RPCProtocol

extension RPCAccessPolicy {
    /// rpcd.conf's `[Access]` for the built-in services and every handler without rules of its own; each
    /// handler file's `[Access]` lists for its service. Names that resolve to no user or group are logged:
    /// such an entry grants nothing.
    init(settings: ServerConfiguration, handlers: [any HandlerService], logger: Logger) {
        var rules: [String: RPCAccessRule] = [:]
        for handler in handlers where handler.configuration.allow != nil || handler.configuration.allowRead != nil {
            rules[handler.descriptor.name] = handler.configuration.accessRule(inheriting: settings.access)
        }
        self.init(default: settings.access, services: rules)
        // The shipped rules name group rpcd, which only an installed rpcd has (make run on a workstation does not):
        // worth saying, not worth a warning. A name the administrator wrote is.
        let level: Logger.Level = settings.access == .protectedDefault && rules.isEmpty ? .notice : .warning
        for name in unresolved {
            logger.log(level: level, "Access rule names no existing user or group; it grants nothing", metadata: [LogField.error: "\(name)"])
        }
    }
}
