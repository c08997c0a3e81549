import Foundation
import JSONRPC
import Logging
import RPCConfig
import RPCCore
import RPCLogging
@testable import RPCDaemon
import RPCModuleHost
import RPCModules
import RPCServer
import RPCSystemd
import RPCTestSupport
import Synchronization
import XCTest

/// What a reload decides, driven through `reload()` with no process and no signal: the outcome, what systemd
/// hears, the counters, and that a failed reload leaves the serving registry alone.
final class ReloadServiceTests: XCTestCase {
    private var directory: URL!
    private var pool: WorkerPool!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-reload-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        pool = WorkerPool(threads: 1)
    }

    override func tearDown() async throws {
        try? await pool.shutdownGracefully()
        try? FileManager.default.removeItem(at: directory)
    }

    private func makeService(
        reloadConfiguration: @escaping @Sendable () throws -> ServerConfiguration, notifier: RecordingNotifier,
        didReload: @escaping @Sendable (HandlerSet.Generation) -> Void = { _ in }
    ) throws -> (ReloadService<AsyncStream<Void>>, RPCRouter) {
        let logger = Logger(label: "test")
        let handlers = HandlerSet(
            directories: HandlerDirectories(directories: [directory.path]), moduleDirectories: ModuleDirectories([directory.path]),
            reservedServices: [], pool: pool, logger: logger)
        let statistics = RPCStatistics()
        let builtins = Daemon.builtinServices(state: RPCServerState(), statistics: statistics)
        let router = RPCRouter(registry: try RPCServiceRegistry(services: builtins), parser: RPCEnvelopeParser(), statistics: statistics)
        let service = ReloadService(
            handlers: handlers, router: router, builtins: builtins, running: .defaults, tls: nil, reloadConfiguration: reloadConfiguration,
            logLevel: LogLevelControl(), notifier: notifier, status: DaemonStatus(router: router, listeners: { [] }),
            logger: logger, requests: ReloadRequests(), hangups: AsyncStream<Void> { $0.finish() },
            didReload: didReload)
        return (service, router)
    }

    /// A configuration that does not parse changes nothing: the same registry serves, the failure is counted and
    /// kept as the last error, and systemd hears RELOADING=1 then READY=1 all the same.
    func testAFailedReloadKeepsTheRegistryAndTellsSystemdItIsReady() async throws {
        struct Unreadable: Error, CustomStringConvertible { var description: String { "rpcd.conf:3: no such key" } }
        let notifier = RecordingNotifier()
        let (service, router) = try makeService(reloadConfiguration: { throw Unreadable() }, notifier: notifier)
        let before = ObjectIdentifier(router.registry)

        let outcome = await service.reload()

        XCTAssertEqual(outcome, .failed("rpcd.conf:3: no such key"))
        XCTAssertEqual(ObjectIdentifier(router.registry), before)
        XCTAssertEqual(router.statistics.reloadsFailed.value, 1)
        XCTAssertEqual(router.statistics.reloadsSucceeded.value, 0)
        XCTAssertEqual(router.statistics.lastError, "reload: rpcd.conf:3: no such key")
        XCTAssertEqual(notifier.sent.map(\.first), [.reloading, .ready])
    }

    /// A good configuration swaps in a new registry with the built-ins and the handlers found now, tells the
    /// advertising about the generation, and counts a success.
    func testASuccessfulReloadSwapsTheRegistryAndReportsTheGeneration() async throws {
        let notifier = RecordingNotifier()
        let reported = LockedCount()
        let (service, router) = try makeService(
            reloadConfiguration: { .defaults }, notifier: notifier, didReload: { _ in reported.increment() })
        let before = ObjectIdentifier(router.registry)

        let outcome = await service.reload()

        XCTAssertEqual(outcome, .reloaded(services: []))
        XCTAssertNotEqual(ObjectIdentifier(router.registry), before)
        XCTAssertEqual(Set(router.registry.services.map(\.descriptor.name)), ["rpc", "rpcd"])
        XCTAssertEqual(reported.value, 1)
        XCTAssertEqual(router.statistics.reloadsSucceeded.value, 1)
        XCTAssertEqual(notifier.sent.map(\.first), [.reloading, .ready])
    }
}

private final class LockedCount: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
