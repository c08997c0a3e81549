package import RPCConfig
package import RPCProtocol

/// One handler as configured by `handlers.d/NAME.conf` and its drop-ins: which module serves which service,
/// and how.
///
///     [Handler]
///     Module=calc          # a name, looked up in the module directory as calc.so, then libcalc.so
///     Service=calc         # defaults to the module's name
///     Enabled=yes
///     Advertise=yes
///     Timeout=30s          # infinity (the default) disables it
///     MaxConcurrency=1024  # calls in flight in the module; past it: error -32004
///     Isolation=process    # a module host process of its own (the default); none: inside rpcd
///     StateDirectory=notes # /var/lib/rpcd/notes: made by rpcd, writable by the module, handed to it
///     ReadWritePaths=/srv/data  # what else the isolated module may write (repeatable)
///     MemoryMax=512M       # the isolated module's memory limit; infinity for none
///     TasksMax=128         # processes and threads the isolated module's host may have; infinity for none
///     [Access]             # replaces rpcd.conf's [Access] lists for this service, key by key
///     Allow=group:admins
///     AllowRead=local 192.168.1.0/24
///     [Config]
///     Anything=handed to the module
package struct HandlerConfiguration: Hashable, Sendable {
    /// The file name without `.conf`.
    package var name: String
    /// `Module=`: the module's name; empty for a program handler.
    package var module: String = ""
    /// `Exec=`: the program a program handler runs (docs/HANDLER-PROTOCOL.md), an absolute path; nil for a module.
    package var program: String?
    /// `[Command]` sections: the methods of a command handler (`HandlerCommand`), in file order; empty for a
    /// module or program handler.
    package var commands: [HandlerCommand] = []
    /// nil: the module's own name.
    package var service: String?
    package var enabled = true
    package var advertise = true
    /// nil: calls never time out.
    package var timeout: Duration?
    package var maxConcurrency = 1024
    /// Where the module runs: a module host process of its own unless the administrator trusts it in-process.
    package var isolation = HandlerIsolation.process
    /// `StateDirectory=`: the name of the handler's directory beneath rpcd's state root (`StateDirectories`);
    /// nil: none.
    package var stateDirectory: String?
    /// What an isolated module may touch (`ReadWritePaths=`, `MemoryMax=`); ignored with `Isolation=none`.
    package var sandbox = HandlerSandbox()
    /// `[Access] Allow=`: nil inherits rpcd.conf's.
    package var allow: [RPCPrincipal]?
    /// `[Access] AllowRead=`: nil inherits rpcd.conf's.
    package var allowRead: [RPCPrincipal]?
    /// The `[Config]` section, last assignment of each key winning.
    package var config: [String: String] = [:]
    /// The `[Config]` assignments as written (all files, in order): where each key came from, for errors.
    package var configEntries: [INIEntry] = []
    /// The files it came from, in application order (main file first, then drop-ins).
    package var sources: [String] = []
    /// The `Module=` assignment that applies (the last one), for refusals that point at it.
    package var moduleEntry: INIEntry?

    package init(name: String) {
        self.name = name
    }

    package static let maxConcurrencyRange = 1...1_000_000

    /// The `[Handler]` keys; `[Config]` is free-form and read separately.
    static let schema = INISchema<HandlerConfiguration>(
        defaults: HandlerConfiguration(name: ""),
        sections: [
            INISection(
                "Handler",
                keys: [
                    .value("Module", \.module, parse: parseModule, format: { $0 }),
                    .value("Exec", \.program, parse: parseProgram, format: { $0 ?? "" }),
                    .value("Service", \.service, parse: { entry throws(ConfigError) in
                        guard ServiceName.isValid(entry.value) else {
                            throw entry.invalidValue(expected: ServiceName.rule)
                        }
                        return entry.value
                    }, format: { $0 ?? "" }),
                    .boolean("Enabled", \.enabled),
                    .boolean("Advertise", \.advertise),
                    .timeSpan("Timeout", \.timeout, in: .zero...RPCLimits.timeSpanCeiling, zeroDisables: true),
                    .integer("MaxConcurrency", \.maxConcurrency, in: maxConcurrencyRange),
                    .value("Isolation", \.isolation, parse: HandlerIsolation.parse, format: \.rawValue),
                    .value("StateDirectory", \.stateDirectory, parse: parseStateDirectory, format: { $0 ?? "" }),
                    .list("ReadWritePaths", \.sandbox.readWritePaths, parse: HandlerSandbox.parsePath, format: { $0 }),
                    .size("MemoryMax", \.sandbox.memoryMax, in: HandlerSandbox.memoryMaxRange),
                    .integer("TasksMax", \.sandbox.tasksMax, in: HandlerSandbox.tasksMaxRange),
                ]),
            INISection("Access", keys: [.principals("Allow", \.allow), .principals("AllowRead", \.allowRead)]),
            // Free-form, read by `make` before the schema applies; named here so that a misspelled `[config]`
            // gets "did you mean [Config]?" and the list of known sections is complete.
            INISection("Config", keys: []),
            // Repeated, one per method, and read by `HandlerCommand.parse`; named here for the same reasons.
            INISection("Command", keys: []),
        ])

    /// `Module=` is a name, never a path: modules are code rpcd runs with its own rights, so they come only from
    /// the module directory, which root alone can write (see `FileTrust`), not from wherever a handler file
    /// points.
    @Sendable private static func parseModule(_ entry: INIEntry) throws(ConfigError) -> String {
        guard isPlainName(entry.value) else {
            throw entry.invalidValue(
                expected: "expected a module name (\(plainNameRule)), found in the module directory as NAME.so or libNAME.so; paths are not accepted")
        }
        return entry.value
    }

    /// `StateDirectory=` names one directory beneath rpcd's state root (`StateDirectories`): never a path, never
    /// `.` or `..`, so no handler file reaches outside the root or into another handler's directory by a path of
    /// its own.
    @Sendable private static func parseStateDirectory(_ entry: INIEntry) throws(ConfigError) -> String? {
        guard isPlainName(entry.value) else {
            throw entry.invalidValue(
                expected: "expected a directory name (\(plainNameRule)), made beneath rpcd's state directory; paths are not accepted")
        }
        return entry.value
    }

    /// What `Module=` and `StateDirectory=` take: one name that is no path, and neither `.` nor `..`.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || "0123456789._+-".unicodeScalars.contains($0) }
    }

    static let plainNameRule = "letters, digits, '.', '_', '+', '-', not starting with '.'"

    /// `Exec=` is an absolute path, checked when the handler starts as a module file is (`FileTrust`): a program
    /// runs with its handler's rights, which its file's owner must not be able to hand to someone else.
    @Sendable private static func parseProgram(_ entry: INIEntry) throws(ConfigError) -> String? {
        guard entry.value.hasPrefix("/"), !entry.value.contains("\0"),
              !entry.value.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else {
            throw entry.invalidValue(expected: "expected the absolute path of the handler's program, with no '.' or '..' in it")
        }
        return entry.value
    }

    /// The file that serves the handler, for messages: its program, its module's name, or for command methods
    /// the handler file.
    package var servedBy: String {
        program ?? (commands.isEmpty ? module : sources.first ?? name)
    }

    /// What its module host runs.
    package var hostKind: ModuleHostKind {
        if program != nil { return .program }
        return commands.isEmpty ? .module : .commands
    }

    /// A command handler's defaults where its file is silent: commands are processes, so fewer at once than a
    /// module's calls, and none runs for ever.
    static let commandMaxConcurrency = 16
    static let commandTimeout = Duration.seconds(30)

    /// The access rule of this handler's service: its own lists where it has them, `inherited` elsewhere.
    package func accessRule(inheriting inherited: RPCAccessRule) -> RPCAccessRule {
        RPCAccessRule(allow: allow ?? inherited.allow, allowRead: allowRead ?? inherited.allowRead)
    }

    /// Builds the configuration of handler `name` from its documents (main file first). A document with no
    /// entries and no sections masks the handler: the result is nil.
    package static func make(name: String, documents: [INIDocument]) throws(ConfigError) -> HandlerConfiguration? {
        guard let main = documents.first, !(main.entries.isEmpty && main.sectionHeaders.isEmpty) else { return nil }
        var handlerDocuments: [INIDocument] = []
        var config: [String: String] = [:]
        var configEntries: [INIEntry] = []
        var commands: [HandlerCommand] = []
        for document in documents {
            var filtered = document
            filtered.entries = document.entries.filter { $0.section != "Config" && $0.section != "Command" }
            filtered.sectionHeaders = document.sectionHeaders.filter { $0.name != "Config" && $0.name != "Command" }
            handlerDocuments.append(filtered)
            for command in try commandSections(of: document) {
                // A later section for the same method (a drop-in's) replaces the earlier one.
                if let index = commands.firstIndex(where: { $0.method == command.method }) {
                    commands[index] = command
                } else {
                    commands.append(command)
                }
            }
            for entry in document.entries where entry.section == "Config" {
                // An empty assignment resets the key, as everywhere in systemd-style files.
                config[entry.key] = entry.value.isEmpty ? nil : entry.value
                configEntries.append(entry)
            }
        }
        var settings = try schema.settings(from: handlerDocuments)
        if !commands.isEmpty {
            guard settings.module.isEmpty, settings.program == nil else {
                throw ConfigError(
                    file: commands[0].file, line: commands[0].line,
                    message: "[Command] sections make a handler of their own: this one has Module= or Exec= too")
            }
            guard settings.isolation == .process else {
                throw ConfigError(
                    file: main.file, line: nil, message: "[Command] methods run in a module host of their own: Isolation=none is for modules")
            }
            let assigned = Set(handlerDocuments.flatMap(\.entries).filter { $0.section == "Handler" }.map(\.key))
            if !assigned.contains("MaxConcurrency") { settings.maxConcurrency = commandMaxConcurrency }
            if !assigned.contains("Timeout") { settings.timeout = commandTimeout }
            settings.commands = commands
        }
        switch (settings.module.isEmpty, settings.program) {
        case (true, nil) where commands.isEmpty:
            throw ConfigError(
                file: main.file, line: nil,
                message: "[Handler] needs Module=, the module to load, or Exec=, the program to run (or [Command] sections)")
        case (false, .some):
            throw ConfigError(file: main.file, line: nil, message: "[Handler] has both Module= and Exec=; a handler runs one of them")
        case (true, .some) where settings.isolation == .none:
            throw ConfigError(
                file: main.file, line: nil, message: "[Handler] Exec= runs a program in a process of its own: Isolation=none is for modules")
        default:
            break
        }
        settings.name = name
        settings.config = config
        settings.configEntries = configEntries
        settings.sources = documents.map(\.file)
        settings.moduleEntry = handlerDocuments.flatMap(\.entries).last { $0.section == "Handler" && $0.key == "Module" }
        return settings
    }

    /// The `[Command]` sections of `document`, each read whole (its assignments are those up to the next header).
    private static func commandSections(of document: INIDocument) throws(ConfigError) -> [HandlerCommand] {
        let headers = document.sectionHeaders
        var commands: [HandlerCommand] = []
        for (index, header) in headers.enumerated() where header.name == "Command" {
            let end = index + 1 < headers.count ? headers[index + 1].line : Int.max
            let entries = document.entries.filter { $0.section == "Command" && $0.line > header.line && $0.line < end }
            commands.append(try HandlerCommand.parse(entries, header: header))
        }
        return commands
    }

    /// Throws for the first `[Config]` key not among `known` (the module's `config_keys`), as an unknown
    /// `[Handler]` key does. `X-` keys are ignored, as everywhere.
    func checkConfigKeys(against known: [String]) throws(ConfigError) {
        for entry in configEntries where !entry.key.hasPrefix("X-") && !known.contains(entry.key) {
            throw entry.unknownKey(in: "Config", known: known)
        }
    }

    /// This handler refused for `reason` (an error's text): where an operator fixes it is the file and line the
    /// reason names (a `ConfigError`'s text begins with them, also after crossing a module host's link), else
    /// the `[Config]` key the reason names (a module's init refusing a value), else `Module=`.
    package func refusal(_ reason: String, previousServes: Bool) -> RPCHandlerRefusal {
        var file = moduleEntry?.file ?? sources.first ?? name
        var line = moduleEntry?.line
        if let named = sources.lazy.compactMap({ source in Self.line(in: reason, of: source).map { (source, $0) } }).first {
            (file, line) = named
        } else if let entry = configEntries.last(where: { Self.names(reason, $0.key) }) {
            (file, line) = (entry.file, entry.line)
        }
        return RPCHandlerRefusal(
            handler: name, service: service ?? name, file: file, line: line, reason: reason, previousServes: previousServes)
    }

    /// The line of `file` that `text` names as `FILE:LINE:`.
    private static func line(in text: String, of file: String) -> Int? {
        let characters = Array(text)
        let prefix = Array(file + ":")
        guard characters.count > prefix.count else { return nil }
        for start in 0...(characters.count - prefix.count) where characters[start..<(start + prefix.count)].elementsEqual(prefix) {
            let digits = characters[(start + prefix.count)...].prefix { $0.isASCII && $0.isNumber }
            let after = start + prefix.count + digits.count
            if !digits.isEmpty, after < characters.count, characters[after] == ":" { return Int(String(digits)) }
        }
        return nil
    }

    /// Whether `text` has `word` with no letter, digit, `_` or `-` on either side.
    private static func names(_ text: String, _ word: String) -> Bool {
        func isWordPart(_ character: Character) -> Bool {
            character.isLetter || character.isNumber || character == "_" || character == "-"
        }
        let characters = Array(text)
        let wanted = Array(word)
        guard !wanted.isEmpty, characters.count >= wanted.count else { return false }
        for start in 0...(characters.count - wanted.count) where characters[start..<(start + wanted.count)].elementsEqual(wanted) {
            let end = start + wanted.count
            if (start == 0 || !isWordPart(characters[start - 1])) && (end == characters.count || !isWordPart(characters[end])) {
                return true
            }
        }
        return false
    }

    /// The configuration as INI text, for `rpcd --check-config`.
    package func rendered() -> String {
        var text = "# \(sources.joined(separator: ", "))\n" + Self.schema.render(self)
        if !config.isEmpty {
            text += "\n[Config]\n" + config.keys.sorted().map { "\($0)=\(config[$0]!)\n" }.joined()
        }
        for command in commands { text += "\n" + command.rendered }
        return text
    }
}
