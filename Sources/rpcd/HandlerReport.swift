import RPCModules

/// The handler part of `rpcd --check-config`: every handler with the files it came from, masked handlers,
/// and whatever would stop one from starting (configuration errors, missing or incompatible modules).
/// Modules are loaded and their descriptors checked, but not initialised.
enum HandlerReport {
    /// Prints the report; returns false when any handler has a problem.
    /// `reservedServices` are the built-in services' names, which no handler may serve.
    static func print(directories: HandlerDirectories, moduleDirectories: ModuleDirectories, reservedServices: Set<String>) -> Bool {
        let scan = directories.scan()
        let loader = ModuleLoader()
        var ok = true
        // Service name → the enabled handler serving it, in the order rpcd starts them: a later one is refused.
        var served: [String: String] = Dictionary(uniqueKeysWithValues: reservedServices.map { ($0, "rpcd itself") })
        Swift.print("\n# Handlers from \(directories.directories.joined(separator: ", ")) (lowest priority first)")
        for handler in scan.handlers.sorted(by: { $0.name < $1.name }) {
            Swift.print("\n# handler '\(handler.name)'\(handler.enabled ? "" : " (disabled)")")
            Swift.print(handler.rendered(), terminator: "")
            let path = moduleDirectories.path(for: handler.module)
            do {
                let image = try loader.load(path: path)
                Swift.print("# module \(path): \(image.name) \(image.version), \(image.methods.count) methods")
                try image.checkConfig(of: handler)
                let service = handler.service ?? image.name
                if handler.enabled {
                    if let first = served[service] {
                        ok = false
                        Swift.print("# error: service '\(service)' of handler '\(handler.name)' is already served by \(first == "rpcd itself" ? first : "handler '\(first)'"); rpcd would refuse this handler (set Service= to another name, or Enabled=no)")
                    } else {
                        served[service] = handler.name
                    }
                }
            } catch {
                ok = ok && !handler.enabled
                Swift.print("# error: \(error)")
            }
        }
        for (name, file) in scan.masked {
            Swift.print("\n# handler '\(name)' masked by \(file)")
        }
        for error in scan.errors {
            ok = false
            Swift.print("\n# error: \(error)")
        }
        return ok
    }
}
