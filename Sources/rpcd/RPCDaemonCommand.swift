import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import NIOCore
import NIOPosix
import RPCConfig
import RPCCore
import RPCDaemon
import RPCLogging
import RPCModuleHost
import RPCModules
import RPCProtocol
import RPCServer
import RPCSystemd
import RPCWideArea
import RPCTLS
import UnixSignals

@main
struct RPCDaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rpcd",
        abstract: "Serve JSON-RPC 2.0 over length-prefixed frames, HTTP and WebSocket on TCP and Unix sockets.",
        discussion: "Configuration: rpcd.conf(5) and docs/CONFIG.md. Protocol: docs/PROTOCOL.md.",
        version: RPCDaemonVersion.version)

    @Option(name: .long, help: ArgumentHelp("Configuration file, with drop-ins from FILE.d/*.conf.", valueName: "file"))
    var config: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Listen on HOST:PORT, [IPV6]:PORT, an absolute socket path, tls://, http://, https:// or http+unix:/PATH; repeatable; replaces Listen=.",
            valueName: "address"))
    var listen: [String] = []

    @Option(
        name: .customLong("handlers-dir"),
        help: ArgumentHelp(
            "A handlers.d directory; repeatable, lowest priority first; replaces the default search path.",
            valueName: "dir"))
    var handlersDirectories: [String] = []

    @Option(
        name: .customLong("module-dir"),
        help: ArgumentHelp(
            "Where bare Module= names are looked up; repeatable, searched in order, the first that has the module wins; replaces the default search path (\(ModuleDirectories.standard.directories.joined(separator: ", "))).",
            valueName: "dir"))
    var moduleDirectoryList: [String] = []

    @Option(
        name: .customLong("state-dir"),
        help: ArgumentHelp(
            "Where handlers' StateDirectory= directories are made (default \(StateDirectories.standardRoot)).", valueName: "dir"))
    var stateRoot = StateDirectories.standardRoot

    private var moduleDirectories: ModuleDirectories {
        moduleDirectoryList.isEmpty ? .standard : ModuleDirectories(moduleDirectoryList)
    }

    @Flag(name: .long, help: "Validate the configuration, print the effective configuration and handlers, and exit.")
    var checkConfig = false

    func run() async throws {
        // SIGHUP is trapped before anything else: its default action ends the process, and a reload asked for
        // while rpcd starts (or just after READY=1, before the reload service runs) must wait its turn, not
        // kill the daemon or be lost. The reload service reads what was queued once it runs.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let notifier: any ServiceNotifier = SystemdNotifier.isSupervised ? SystemdNotifier() : NoNotifier()
        let settings: ServerConfiguration
        do {
            settings = try loadConfiguration()
        } catch {
            DescriptorOutput.standardError("rpcd: \(error)\n")
            if !checkConfig { notifier.send(.status("Configuration error: \(error)"), .errno(EINVAL)) }
            throw ExitCode(78)  // EX_CONFIG, which systemd shows as "status=78/CONFIG"
        }
        let tls: TLSServerContext?
        let tsigKey: TSIGKey?
        do {
            tls = try TLSSetup.serverContext(for: settings)
            tsigKey = try WideAreaAdvertising.key(for: settings)
        } catch {
            DescriptorOutput.standardError("rpcd: \(error)\n")
            if !checkConfig { notifier.send(.status("Configuration error: \(error)"), .errno(EINVAL)) }
            throw ExitCode(78)
        }
        if checkConfig {
            print(settings.rendered(), terminator: "")
            let builtins = Set(Daemon.builtinServices(state: RPCServerState(), statistics: RPCStatistics()).map(\.descriptor.name))
            guard HandlerReport.print(directories: handlerDirectories, moduleDirectories: moduleDirectories, reservedServices: builtins) else {
                throw ExitCode(78)
            }
            return
        }

        let logLevel = LogLevelControl(Logger.Level(settings.logLevel))
        let output = LogOutput.detect(environment: ProcessInfo.processInfo.environment)
        LoggingSystem.bootstrap(output.factory(identifier: "rpcd", level: logLevel))
        let logger = Logger(label: "rpcd")
        ResourceLimits.raiseOpenFileLimit(logger: logger)
        AllocatorTuning.daemon.apply()

        let activatedSockets: [ActivatedSocket]
        do {
            activatedSockets = try SocketActivation.takeListeningSockets()
        } catch {
            fail(error, errno: EBADF, notifier: notifier, logger: logger)
            throw ExitCode.failure
        }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: settings.threads ?? System.coreCount)
        let pool = WorkerPool(threads: max(2, System.coreCount))
        let handlers = HandlerSet(
            directories: handlerDirectories, moduleDirectories: moduleDirectories, stateRoot: stateRoot,
            reservedServices: Set(Daemon.builtinServices(state: RPCServerState(), statistics: RPCStatistics()).map(\.descriptor.name)),
            pool: pool, logger: logger, group: group, walls: HostWalls.detect(logger: logger))
        let daemon = Daemon(
            settings: settings, handlers: handlers, logger: logger, logLevel: logLevel, notifier: notifier,
            activatedSockets: activatedSockets, tls: tls, tsigKey: tsigKey)
        do {
            try await daemon.run(group: group, pool: pool, hangups: hangups, reloadConfiguration: { [self] in try self.loadConfiguration() })
        } catch {
            fail(error, errno: (error as? RPCServerError)?.errno ?? EIO, notifier: notifier, logger: logger)
            try? await pool.shutdownGracefully()
            try? await group.shutdownGracefully()
            throw ExitCode.failure
        }
        try await pool.shutdownGracefully()
        try await group.shutdownGracefully()
        logger.notice("Stopped")
    }

    /// Tells systemd and the log why rpcd gives up (`ERRNO=` and `STATUS=`, shown by `systemctl status`).
    private func fail(_ error: any Error, errno: Int32, notifier: any ServiceNotifier, logger: Logger) {
        notifier.send(.status("Failed: \(error)"), .errno(errno))
        logger.critical(
            "rpcd stopped on an error",
            metadata: [LogField.error: "\(error)", LogField.messageID: "\(LogMessageID.startFailed)"])
    }

    private var handlerDirectories: HandlerDirectories {
        handlersDirectories.isEmpty ? HandlerDirectories() : HandlerDirectories(directories: handlersDirectories)
    }

    /// `--config FILE` must exist; without it the default file is read when present. `--listen` alone runs
    /// with no file at all.
    private func loadConfiguration() throws -> ServerConfiguration {
        var settings: ServerConfiguration
        if let config {
            settings = try ServerConfiguration.load(path: config)
        } else if listen.isEmpty, FileManager.default.fileExists(atPath: ServerConfiguration.defaultPath) {
            settings = try ServerConfiguration.load(path: ServerConfiguration.defaultPath)
        } else {
            settings = .defaults
        }
        if !listen.isEmpty {
            settings.listen = try listen.map { text throws in
                do { return try RPCEndpoint(parsing: text) } catch { throw ValidationError("--listen: \(error)") }
            }
        }
        return settings
    }
}
