import RPCJSON
import RPCModuleLink

/// What rpcd tells a module host process to run (`ModuleLinkMessage.start`): the module file and the part of
/// the handler's configuration the module sees. Limits (`Timeout=`, `MaxConcurrency=`) and access rules stay
/// in rpcd, which enforces them before a call crosses the link.
struct ModuleHostStart: Equatable, Sendable {
    /// The module file, resolved by rpcd (`ModuleHost.modulePath`); the host checks and loads it as rpcd would.
    var modulePath: String
    var handler: String
    var service: String?
    var config: [String: String]

    init(modulePath: String, configuration: HandlerConfiguration) {
        self.modulePath = modulePath
        self.handler = configuration.name
        self.service = configuration.service
        self.config = configuration.config
    }

    var json: JSONValue {
        [
            "module": .string(modulePath), "handler": .string(handler), "service": service.map(JSONValue.string) ?? .null,
            "config": .object(config.mapValues(JSONValue.string)),
        ]
    }

    init?(json: JSONValue) {
        guard let modulePath = json["module"]?.stringValue, let handler = json["handler"]?.stringValue,
              let config = json["config"]?.objectValue else { return nil }
        self.modulePath = modulePath
        self.handler = handler
        self.service = json["service"]?.stringValue
        self.config = config.compactMapValues(\.stringValue)
    }

    /// The configuration the host's in-process `ModuleService` runs with: no timeout and no concurrency limit of
    /// its own (rpcd's apply before a call is sent).
    var configuration: HandlerConfiguration {
        var configuration = HandlerConfiguration(name: handler)
        configuration.module = modulePath
        configuration.service = service
        configuration.config = config
        configuration.isolation = .none
        configuration.maxConcurrency = HandlerConfiguration.maxConcurrencyRange.upperBound
        return configuration
    }
}
