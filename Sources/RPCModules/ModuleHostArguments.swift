/// What `rpcd-module-host` is started with: `HANDLER --module PATH --module-file FD [--read-write PATH]...
/// [--state-directory PATH] --memory-max N|infinity`, or `HANDLER --program PATH ...` for a program handler, which the host starts and
/// speaks to (docs/HANDLER-PROTOCOL.md). The sandbox travels here rather than in the link's `start` message because the host
/// applies it in `main`, before any thread exists (Landlock restricts the thread that asks, and the threads it
/// starts after). The module file comes as a descriptor rpcd opened and checked (`ModuleLoader.openTrusted`):
/// the host, which runs as a user of its own, need not reach its path.
struct ModuleHostArguments: Equatable, Sendable {
    var handler: String
    /// The module file, or the program of a program handler.
    var modulePath: String
    /// The host's descriptor of the module file (after the link, 3); nil for a program handler.
    var moduleFile: Int32? = 4
    var sandbox = HandlerSandbox()

    init(handler: String, modulePath: String, sandbox: HandlerSandbox, program: Bool = false) {
        self.handler = handler
        self.modulePath = modulePath
        self.sandbox = sandbox
        if program { moduleFile = nil }
    }

    /// Whether the host runs a program handler rather than a module.
    var isProgram: Bool { moduleFile == nil }

    /// The arguments after the executable's name.
    var arguments: [String] {
        let served = moduleFile.map { ["--module", modulePath, "--module-file", "\($0)"] } ?? ["--program", modulePath]
        return [handler] + served + sandbox.arguments
    }

    /// Reads `arguments` (after the executable's name); nil for anything `arguments` does not write.
    init?(parsing arguments: [String]) {
        guard let handler = arguments.first else { return nil }
        self.handler = handler
        var modulePath: String?
        var moduleFile: Int32?
        var program = false
        var sandbox = HandlerSandbox()
        sandbox.memoryMax = nil
        var rest = arguments.dropFirst()[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch option {
            case "--module": modulePath = value
            case "--program":
                modulePath = value
                program = true
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
        guard let modulePath, program == (moduleFile == nil) else { return nil }
        self.modulePath = modulePath
        self.moduleFile = moduleFile
        self.sandbox = sandbox
    }

    /// Checks what serves a handler and opens what the host is handed: the module file, opened and checked
    /// (`ModuleLoader.openTrusted`), or nothing for a program, which is checked the same way and started by its
    /// path (`ModuleLoader.checkProgram`).
    static func openServed(_ path: String, program: Bool) throws(ModuleLoadError) -> [Int32] {
        if program {
            try ModuleLoader.checkProgram(path: path)
            return []
        }
        return [try ModuleLoader.openTrusted(path: path)]
    }
}
