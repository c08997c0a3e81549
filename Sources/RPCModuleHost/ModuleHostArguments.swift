/// What `rpcd-module-host` is started with: `HANDLER --module PATH --module-file FD [--read-write PATH]...
/// [--state-directory PATH] --memory-max N|infinity`, or `HANDLER --program PATH ...` for a program handler, which the host starts and
/// speaks to (docs/HANDLER-PROTOCOL.md), or `HANDLER --commands FILE ...` for command methods, which the host reads from
/// the link's `start` (FILE, the handler file, names them in messages). The sandbox travels here rather than in the link's `start` message because the host
/// applies it in `main`, before any thread exists (Landlock restricts the thread that asks, and the threads it
/// starts after). The module file comes as a descriptor rpcd opened and checked (`ModuleLoader.openTrusted`):
/// the host, which runs as a user of its own, need not reach its path.
package struct ModuleHostArguments: Equatable, Sendable {
    package var handler: String
    /// The module file, the program of a program handler, or the handler file of command methods.
    package var modulePath: String
    package var kind: ModuleHostKind
    /// The host's descriptor of the module file (after the link, 3); nil unless it runs a module.
    package var moduleFile: Int32? = 4
    package var sandbox = HandlerSandbox()

    package init(handler: String, modulePath: String, sandbox: HandlerSandbox, kind: ModuleHostKind = .module) {
        self.handler = handler
        self.modulePath = modulePath
        self.sandbox = sandbox
        self.kind = kind
        if kind != .module { moduleFile = nil }
    }

    /// Whether the host starts processes of the handler's (a program, or commands) rather than loading a module.
    package var startsProcesses: Bool { kind != .module }

    /// The arguments after the executable's name.
    package var arguments: [String] {
        let served = switch kind {
        case .module: ["--module", modulePath, "--module-file", "\(moduleFile ?? 4)"]
        case .program: ["--program", modulePath]
        case .commands: ["--commands", modulePath]
        }
        return [handler] + served + sandbox.arguments
    }

    /// Reads `arguments` (after the executable's name); nil for anything `arguments` does not write.
    package init?(parsing arguments: [String]) {
        guard let handler = arguments.first else { return nil }
        self.handler = handler
        var modulePath: String?
        var moduleFile: Int32?
        var kind = ModuleHostKind.module
        var sandbox = HandlerSandbox()
        sandbox.memoryMax = nil
        var rest = arguments.dropFirst()[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch option {
            case "--module": modulePath = value
            case "--program":
                modulePath = value
                kind = .program
            case "--commands":
                modulePath = value
                kind = .commands
            case "--module-file":
                guard let descriptor = Int32(value), descriptor > 2 else { return nil }
                moduleFile = descriptor
            case "--read-write": sandbox.readWritePaths.append(value)
            case "--state-directory": sandbox.stateDirectory = value
            case "--memory-max":
                guard value == "infinity" || Int(value) != nil else { return nil }
                sandbox.memoryMax = Int(value)
            default: return nil
            }
        }
        guard let modulePath, (kind == .module) == (moduleFile != nil) else { return nil }
        self.modulePath = modulePath
        self.kind = kind
        self.moduleFile = moduleFile
        self.sandbox = sandbox
    }

    /// Checks what serves a handler and opens what the host is handed: the module file at `path`, opened and
    /// checked (`ModuleLoader.openTrusted`), or nothing for a program or commands, whose programs are checked the
    /// same way and started by their paths (`ModuleLoader.checkProgram`).
    package static func openServed(_ path: String, configuration: HandlerConfiguration) throws(ModuleLoadError) -> [Int32] {
        switch configuration.hostKind {
        case .module:
            return [try ModuleLoader.openTrusted(path: path)]
        case .program:
            try ModuleLoader.checkProgram(path: path)
        case .commands:
            for command in configuration.commands {
                do {
                    try ModuleLoader.checkProgram(path: command.program)
                } catch {
                    throw ModuleLoadError(path, "\(command.file):\(command.line): [Command] \(command.method): \(command.program): \(error.reason)")
                }
            }
        }
        return []
    }
}
