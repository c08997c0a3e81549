/// What `rpcd-module-host` is started with: `HANDLER --module PATH --module-file FD [--read-write PATH]...
/// --memory-max N|infinity`. The sandbox travels here rather than in the link's `start` message because the host
/// applies it in `main`, before any thread exists (Landlock restricts the thread that asks, and the threads it
/// starts after). The module file comes as a descriptor rpcd opened and checked (`ModuleLoader.openTrusted`):
/// the host, which runs as a user of its own, need not reach its path.
struct ModuleHostArguments: Equatable, Sendable {
    var handler: String
    var modulePath: String
    /// The host's descriptor of the module file (after the link, 3).
    var moduleFile: Int32 = 4
    var sandbox = HandlerSandbox()

    init(handler: String, modulePath: String, sandbox: HandlerSandbox) {
        self.handler = handler
        self.modulePath = modulePath
        self.sandbox = sandbox
    }

    /// The arguments after the executable's name.
    var arguments: [String] { [handler, "--module", modulePath, "--module-file", "\(moduleFile)"] + sandbox.arguments }

    /// Reads `arguments` (after the executable's name); nil for anything `arguments` does not write.
    init?(parsing arguments: [String]) {
        guard let handler = arguments.first else { return nil }
        self.handler = handler
        var modulePath: String?
        var moduleFile: Int32?
        var sandbox = HandlerSandbox()
        sandbox.memoryMax = nil
        var rest = arguments.dropFirst()[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch option {
            case "--module": modulePath = value
            case "--module-file":
                guard let descriptor = Int32(value), descriptor > 2 else { return nil }
                moduleFile = descriptor
            case "--read-write": sandbox.readWritePaths.append(value)
            case "--memory-max":
                guard value == "infinity" || Int(value) != nil else { return nil }
                sandbox.memoryMax = Int(value)
            default: return nil
            }
        }
        guard let modulePath, let moduleFile else { return nil }
        self.modulePath = modulePath
        self.moduleFile = moduleFile
        self.sandbox = sandbox
    }
}
