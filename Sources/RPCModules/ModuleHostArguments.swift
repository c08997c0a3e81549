/// What `rpcd-module-host` is started with: `HANDLER --module PATH [--read-write PATH]... --memory-max N|infinity`.
/// The sandbox travels here rather than in the link's `start` message because the host applies it in `main`,
/// before any thread exists (Landlock restricts the thread that asks, and the threads it starts after).
struct ModuleHostArguments: Equatable, Sendable {
    var handler: String
    var modulePath: String
    var sandbox = HandlerSandbox()

    init(handler: String, modulePath: String, sandbox: HandlerSandbox) {
        self.handler = handler
        self.modulePath = modulePath
        self.sandbox = sandbox
    }

    /// The arguments after the executable's name.
    var arguments: [String] { [handler, "--module", modulePath] + sandbox.arguments }

    /// Reads `arguments` (after the executable's name); nil for anything `arguments` does not write.
    init?(parsing arguments: [String]) {
        guard let handler = arguments.first else { return nil }
        self.handler = handler
        var modulePath: String?
        var sandbox = HandlerSandbox()
        sandbox.memoryMax = nil
        var rest = arguments.dropFirst()[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch option {
            case "--module": modulePath = value
            case "--read-write": sandbox.readWritePaths.append(value)
            case "--memory-max":
                guard value == "infinity" || Int(value) != nil else { return nil }
                sandbox.memoryMax = Int(value)
            default: return nil
            }
        }
        guard let modulePath else { return nil }
        self.modulePath = modulePath
        self.sandbox = sandbox
    }
}
