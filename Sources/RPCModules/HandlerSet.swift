package import Logging
package import NIOCore
import NIOPosix
import RPCBinding
package import RPCConfig
package import RPCCore
import RPCLogging
package import RPCModuleHost
package import RPCProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Turns the handler configuration into running module services, at start-up and on every reload.
///
/// `prepare` builds the next generation without touching the current one: unchanged handlers (same
/// configuration, same module image) keep their instance, changed ones get a new instance, and failures
/// disable only their own handler. The caller swaps the router's registry, then `commit`s, which retires
/// the instances no longer used (each is de-initialised after its last call). Thread-safe; `prepare` blocks
/// (file I/O, `dlopen`, module `init`), so call it off the event loops.
package final class HandlerSet: Sendable {
    package let directories: HandlerDirectories
    package let moduleDirectories: ModuleDirectories
    /// Where handlers' `StateDirectory=` directories are made (`StateDirectories`).
    package let stateRoot: String
    private let reservedServices: Set<String>
    private let loader = ModuleLoader()
    private let pool: WorkerPool
    private let logger: Logger
    private let active = Mutex<[String: any HandlerService]>([:])
    /// Where the links to module host processes live (`Isolation=process`), and where they are supervised.
    private let group: any EventLoopGroup
    private let hostExecutable: String
    /// What every module host starts inside (its cgroup), beyond the sandbox it applies itself.
    private let walls: HostWalls
    /// Where every handler's events go: give it to the router (`RPCRouter(events:)`), so they reach subscribers.
    package let events: RPCEventHub

    /// The handlers of one configuration.
    package struct Generation: Sendable {
        /// Services to route to.
        package var services: [any HandlerService] = []
        /// Services that are configured but could not be started: calls get -32005.
        package var unavailable: Set<String> = []
        /// Handler names and what went wrong, for `--check-config` and the status line.
        package var problems: [String] = []
        /// The enabled handlers that were not started, with where to fix them (`rpcd.reload` answers them).
        package var refusals: [RPCHandlerRefusal] = []
        fileprivate var retiring: [any HandlerService] = []
    }

    /// `reservedServices` are names no handler may take (the built-in services). Module host processes run
    /// `hostExecutable` inside `walls` and are linked to rpcd on `group`'s loops.
    package init(
        directories: HandlerDirectories, moduleDirectories: ModuleDirectories = .standard,
        stateRoot: String = StateDirectories.standardRoot, reservedServices: Set<String>, pool: WorkerPool, logger: Logger, events: RPCEventHub = RPCEventHub(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, hostExecutable: String = ModuleHostExecutable.locate(),
        walls: HostWalls = .processOnly
    ) {
        self.group = group
        self.hostExecutable = hostExecutable
        self.walls = walls
        self.events = events
        self.directories = directories
        self.moduleDirectories = moduleDirectories
        self.stateRoot = stateRoot
        self.reservedServices = reservedServices
        self.pool = pool
        self.logger = logger
        ModuleLog.logger = logger
    }

    /// Reads the handler files and starts what they describe. With `strict` (reload), an unreadable or invalid
    /// handler file aborts the whole preparation, so a broken edit keeps the old configuration serving.
    package func prepare(strict: Bool) throws(ConfigError) -> Generation {
        var scan = directories.scan()
        for index in scan.handlers.indices {
            scan.handlers[index].sandbox.stateDirectory = scan.handlers[index].stateDirectory.map { stateRoot + "/" + $0 }
        }
        if strict, let error = scan.errors.first { throw error }
        var generation = Generation()
        for error in scan.errors {
            logger.error("Handler configuration refused", metadata: [LogField.error: "\(error)"])
            generation.problems.append("\(error)")
        }
        // The file could not be read, so its Service= is unknown: the handler's name stands in for it.
        generation.unavailable.formUnion(scan.failedHandlers)
        for (name, file) in scan.masked {
            logger.info("Handler masked", metadata: [LogField.handler: "\(name)", LogField.file: "\(file)"])
        }
        let previous = active.withLock { $0 }
        let duplicates = knownDuplicates(scan.handlers)
        // Module hosts start side by side: each spends most of its start in exec, linking and its module's init.
        var launches: [String: Launch] = [:]
        for configuration in scan.handlers where configuration.enabled && configuration.isolation == .process
            && duplicates[configuration.name] == nil && reusableHost(configuration, previous[configuration.name]) == nil {
            let path = servingPath(configuration)
            let supervisor = ModuleHostSupervisor(
                configuration: configuration, modulePath: path, executable: hostExecutable, walls: walls, loop: group.next(),
                events: events, logger: Self.logger(logger, module: path))
            launches[configuration.name] = Launch(supervisor: supervisor, firstStart: supervisor.launchFirst())
        }
        var taken = reservedServices
        for configuration in scan.handlers.sorted(by: { $0.name < $1.name }) {
            guard configuration.enabled else {
                logger.info("Handler disabled", metadata: [LogField.handler: "\(configuration.name)"])
                continue
            }
            let old = previous[configuration.name]
            do {
                if let first = duplicates[configuration.name] {
                    throw ModuleLoadError(
                        configuration.servedBy,
                        "handler '\(configuration.name)' would serve the same service as \(first) (\(configuration.sources.first ?? "")); refused before its module's init (set Service=)")
                }
                let service = try start(configuration, reusing: old, launched: launches[configuration.name], taken: taken)
                guard taken.insert(service.descriptor.name).inserted else {
                    if service !== old { service.retire() }
                    throw Self.alreadyServed(service.descriptor.name, configuration, path: configuration.servedBy)
                }
                generation.services.append(service)
            } catch {
                let keeps = old != nil && strict
                let refusal = configuration.refusal("\(error)", previousServes: keeps)
                if let old, keeps {
                    logger.error(
                        "Handler could not be restarted; the previous instance keeps serving",
                        metadata: [LogField.service: "\(old.descriptor.name)", LogField.handler: "\(configuration.name)",
                                   LogField.file: "\(refusal.location)", LogField.error: "\(error)"])
                    generation.services.append(old)
                    taken.insert(old.descriptor.name)
                } else {
                    logger.error(
                        "Handler refused",
                        metadata: [LogField.service: "\(refusal.service)", LogField.handler: "\(configuration.name)",
                                   LogField.file: "\(refusal.location)", LogField.error: "\(error)",
                                   LogField.messageID: "\(LogMessageID.moduleRefused)"])
                    generation.unavailable.insert(refusal.service)
                }
                generation.problems.append("\(configuration.name): \(error)")
                generation.refusals.append(refusal)
            }
        }
        let kept = Set(generation.services.map(ObjectIdentifier.init))
        generation.retiring = previous.values.filter { !kept.contains(ObjectIdentifier($0)) }
        return generation
    }

    /// Makes `generation` the active one and retires what it replaced. Call after the router serves it.
    package func commit(_ generation: Generation) {
        active.withLock { active in
            active = Dictionary(uniqueKeysWithValues: generation.services.map { ($0.configuration.name, $0) })
        }
        for service in generation.retiring { service.retire() }
    }

    /// Retires every instance (shutdown); each is de-initialised after its last call.
    package func retireAll() {
        let services = active.withLock { active in
            defer { active = [:] }
            return Array(active.values)
        }
        for service in services { service.retire() }
    }

    private func start(
        _ configuration: HandlerConfiguration, reusing old: (any HandlerService)?, launched: Launch?, taken: Set<String>
    ) throws(ModuleLoadError) -> any HandlerService {
        let path = servingPath(configuration)
        switch configuration.isolation {
        case .none:
            // In rpcd itself the module writes with rpcd's rights: its state directory needs making, not granting.
            if let state = configuration.sandbox.stateDirectory {
                do { try StateDirectories.make(state) } catch { throw ModuleLoadError(path, error.description) }
            }
            let image = try loader.load(path: path)
            if let old = old as? ModuleService, old.configuration == configuration, old.image === image { return old }
            // Refused before the module's init runs: a second handler for a service never starts.
            let name = configuration.service ?? image.name
            guard !taken.contains(name) else { throw Self.alreadyServed(name, configuration, path: path) }
            let service = try ModuleService(image: image, configuration: configuration, pool: pool, logger: logger, events: events)
            logStarted(service, logger: service.logger)
            return service
        case .process:
            // The module is never loaded into rpcd: the host checks and loads it, and reports its descriptor.
            if let old = reusableHost(configuration, old) { return old }
            guard let launched else { throw ModuleLoadError(path, "its module host was not started") }
            let service = try IsolatedModuleService(
                supervisor: launched.supervisor, firstStart: launched.firstStart, moduleIdentity: FileIdentity(path: path))
            var serviceLogger = Self.logger(logger, module: path)
            serviceLogger[metadataKey: LogField.service] = "\(service.descriptor.name)"
            logStarted(service, logger: serviceLogger)
            return service
        }
    }

    /// Enabled handlers that would serve a service an earlier one (in name order) serves, as far as is known
    /// before any module code runs: the same `Service=`, a reserved name, or the same module file without a
    /// `Service=` (one file serves under one name). Handler name → who serves it first, for the refusal. Such a
    /// handler is refused before its module host starts or its module's init runs; a collision that only the
    /// module's own name reveals is found by `start` (in-process: still before init).
    private func knownDuplicates(_ handlers: [HandlerConfiguration]) -> [String: String] {
        var first: [String: String] = [:]
        var duplicates: [String: String] = [:]
        for configuration in handlers.sorted(by: { $0.name < $1.name }) where configuration.enabled {
            if let service = configuration.service, reservedServices.contains(service) {
                duplicates[configuration.name] = "rpcd itself"
                continue
            }
            let key = configuration.service.map { "service \($0)" }
                ?? "file \(servingPath(configuration))"
            if let holder = first[key] {
                duplicates[configuration.name] = "handler '\(holder)'"
            } else {
                first[key] = configuration.name
            }
        }
        return duplicates
    }

    /// The file that serves `configuration`: its program (`Exec=`), its module as found in the module
    /// directories, or for command methods its handler file.
    package func servingPath(_ configuration: HandlerConfiguration) -> String {
        switch configuration.hostKind {
        case .module: moduleDirectories.path(for: configuration.module)
        case .program, .commands: configuration.servedBy
        }
    }

    private static func alreadyServed(_ service: String, _ configuration: HandlerConfiguration, path: String) -> ModuleLoadError {
        ModuleLoadError(path, "service '\(service)' of handler '\(configuration.name)' is already served (\(configuration.sources.first ?? ""))")
    }

    /// A module host started by `prepare`, not yet serving.
    private struct Launch {
        var supervisor: ModuleHostSupervisor
        var firstStart: EventLoopFuture<RPCServiceDescriptor>
    }

    /// `old`, when it can serve `configuration` as it is: the same configuration, the same module file, and a
    /// host that serves or will after its backoff.
    private func reusableHost(_ configuration: HandlerConfiguration, _ old: (any HandlerService)?) -> IsolatedModuleService? {
        guard let old = old as? IsolatedModuleService, old.configuration == configuration, old.supervisor.isHealthy,
              let identity = FileIdentity(path: servingPath(configuration)),
              old.moduleIdentity == identity else { return nil }
        return old
    }

    /// The fields an in-process handler's entries carry (`ModuleService`), for an isolated one: its module file.
    private static func logger(_ logger: Logger, module path: String) -> Logger {
        var logger = logger
        logger[metadataKey: LogField.module] = "\(path.split(separator: "/").last ?? "")"
        return logger
    }

    private func logStarted(_ service: any HandlerService, logger: Logger) {
        logger.notice(
            "Handler started",
            metadata: [LogField.handler: "\(service.configuration.name)", LogField.moduleVersion: "\(service.descriptor.version)",
                       LogField.fingerprint: "\(service.descriptor.fingerprint)",
                       LogField.messageID: "\(LogMessageID.moduleLoaded)"])
    }

}
