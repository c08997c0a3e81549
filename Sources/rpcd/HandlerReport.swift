import NIOPosix
import RPCModules

/// The handler part of `rpcd --check-config`: every handler with the files it came from, masked handlers,
/// and whatever would stop one from starting (configuration errors, missing or incompatible modules).
/// Each module is loaded and its descriptor and `[Config]` keys checked in a module host process of its own,
/// sandboxed as its handler's would be (`ModuleHostCheck`), never in this process, and never initialised.
enum HandlerReport {
    /// Prints the report; returns false when any handler has a problem.
    /// `reservedServices` are the built-in services' names, which no handler may serve.
    static func print(directories: HandlerDirectories, moduleDirectories: ModuleDirectories, reservedServices: Set<String>) -> Bool {
        let scan = directories.scan()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let walls = HostWalls.checking()
        var ok = true
        // Service name → the enabled handler serving it, in the order rpcd starts them: a later one is refused.
        var served: [String: String] = Dictionary(uniqueKeysWithValues: reservedServices.map { ($0, "rpcd itself") })
        Swift.print("\n# Handlers from \(directories.directories.joined(separator: ", ")) (lowest priority first)")
        for handler in scan.handlers.sorted(by: { $0.name < $1.name }) {
            Swift.print("\n# handler '\(handler.name)'\(handler.enabled ? "" : " (disabled)")")
            Swift.print(handler.rendered(), terminator: "")
            let (kind, path) = switch handler.hostKind {
            case .module: ("module", moduleDirectories.path(for: handler.module))
            case .program: ("program", handler.servedBy)
            case .commands: ("command methods of", handler.servedBy)
            }
            do {
                let descriptor = try ModuleHostCheck.check(handler, modulePath: path, walls: walls, eventLoop: loop).get()
                Swift.print("# \(kind) \(path): \(descriptor.name) \(descriptor.version), \(descriptor.methods.count) methods")
                let service = descriptor.name
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
