package import RPCConfig
package import RPCJSON
import RPCModuleLink

/// What rpcd tells a module host process to run (`ModuleLinkMessage.start`): the module file and the part of
/// the handler's configuration the module sees. Limits (`Timeout=`, `MaxConcurrency=`) and access rules stay
/// in rpcd, which enforces them before a call crosses the link.
package struct ModuleHostStart: Equatable, Sendable {
    /// The module file, resolved by rpcd (`HandlerSet.servingPath`); the host checks and loads it as rpcd would.
    package var modulePath: String
    package var handler: String
    package var service: String?
    package var config: [String: String]
    /// The `[Config]` assignments with their files and lines: the host checks them against the keys the module
    /// declares before its `init` runs, with the errors rpcd itself gives (file, line, "did you mean").
    package var configEntries: [INIEntry]
    /// `rpcd --check-config`: load and check the module, report its descriptor, and never call its `init`.
    package var checkOnly: Bool
    /// A command handler's methods (`[Command]`), read again by the host from the sections as written.
    package var commands: [HandlerCommand]
    /// The handler's `Timeout=`, in milliseconds: a program that leaves a cancelled call unanswered this long
    /// again is hung (`HandlerProgram`); nil: none.
    package var timeoutMilliseconds: Int?

    package init(modulePath: String, configuration: HandlerConfiguration, checkOnly: Bool = false) {
        self.modulePath = modulePath
        self.handler = configuration.name
        self.service = configuration.service
        self.config = configuration.config
        self.configEntries = configuration.configEntries
        self.checkOnly = checkOnly
        self.commands = configuration.commands
        self.timeoutMilliseconds = configuration.timeout.map { Int($0 / .milliseconds(1)) }
    }

    package var json: JSONValue {
        [
            "module": .string(modulePath), "handler": .string(handler), "service": service.map(JSONValue.string) ?? .null,
            "config": .object(config.mapValues(JSONValue.string)),
            "configEntries": .array(configEntries.map { entry in
                ["key": .string(entry.key), "value": .string(entry.value), "file": .string(entry.file), "line": .number(entry.line)]
            }),
            "check": .bool(checkOnly),
            "commands": .array(commands.map(\.json)),
            "timeout_ms": timeoutMilliseconds.map(JSONValue.number) ?? .null,
        ]
    }

    package init?(json: JSONValue) {
        guard let modulePath = json["module"]?.stringValue, let handler = json["handler"]?.stringValue,
              let config = json["config"]?.objectValue else { return nil }
        self.modulePath = modulePath
        self.handler = handler
        self.service = json["service"]?.stringValue
        self.config = config.compactMapValues(\.stringValue)
        self.configEntries = (json["configEntries"]?.arrayValue ?? []).compactMap { entry in
            guard let key = entry["key"]?.stringValue, let value = entry["value"]?.stringValue,
                  let file = entry["file"]?.stringValue, let line = entry["line"]?.intValue else { return nil }
            return INIEntry(section: "Config", key: key, value: value, file: file, line: line)
        }
        self.checkOnly = json["check"] == .bool(true)
        var commands: [HandlerCommand] = []
        for command in json["commands"]?.arrayValue ?? [] {
            guard let read = try? HandlerCommand.parse(json: command) else { return nil }
            commands.append(read)
        }
        self.commands = commands
        self.timeoutMilliseconds = json["timeout_ms"]?.intValue
    }

    /// The configuration the host's `ModuleInstance` runs with: no timeout and no concurrency limit of
    /// its own (rpcd's apply before a call is sent).
    package var configuration: HandlerConfiguration {
        var configuration = HandlerConfiguration(name: handler)
        configuration.module = modulePath
        configuration.service = service
        configuration.config = config
        configuration.configEntries = configEntries
        configuration.isolation = .none
        configuration.maxConcurrency = HandlerConfiguration.maxConcurrencyRange.upperBound
        return configuration
    }
}
