import Logging
import NIOCore
import NIOPosix
import RPCSystemd
import RPCTestSupport
import ServiceLifecycle
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The watchdog pings only while every event loop and the pool answer probes.
final class WatchdogServiceTests: XCTestCase {
    private var group: MultiThreadedEventLoopGroup!
    private var pool: NIOThreadPool!

    override func setUp() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    override func tearDown() async throws {
        try await pool.shutdownGracefully()
        try await group.shutdownGracefully()
    }

    /// Participants as the daemon makes them (Sources/RPCDaemon/LivenessProbe+EventLoops.swift): each loop, then
    /// the pool.
    private func makeProbe() -> LivenessProbe {
        let loops = Array(group.makeIterator())
        let pool = self.pool!
        return LivenessProbe(
            participants: loops.enumerated().map { index, loop in
                LivenessProbe.Participant(name: "event loop \(index)") { answer in loop.execute(answer) }
            } + [LivenessProbe.Participant(name: "thread pool") { answer in _ = pool.runIfActive(eventLoop: loops[0], answer) }])
    }

    func testProbeRoundCompletesWhenEveryLoopAndThePoolRan() async throws {
        let probe = makeProbe()
        let round = probe.launch()
        try await waitUntil("the probe round to complete") { round.isComplete }
        XCTAssertEqual(probe.describeMissing(round), [])
    }

    func testBlockedLoopLeavesTheRoundIncompleteAndIsNamed() async throws {
        let loops = Array(group.makeIterator())
        let release = DispatchSemaphore(value: 0)
        loops[1].execute { release.wait() }
        let probe = makeProbe()
        let round = probe.launch()
        try await waitUntil("loop 0 and the pool to answer") { probe.describeMissing(round) == ["event loop 1"] }
        XCTAssertFalse(round.isComplete)
        release.signal()
        try await waitUntil("the round to complete once the loop is free") { round.isComplete }
    }

    func testBlockedPoolLeavesTheRoundIncomplete() async throws {
        let release = DispatchSemaphore(value: 0)
        pool.submit { _ in release.wait() }
        let probe = makeProbe()
        let round = probe.launch()
        try await waitUntil("the loops to answer") { probe.describeMissing(round) == ["thread pool"] }
        release.signal()
        try await waitUntil("the round to complete once the pool is free") { round.isComplete }
    }

    /// Pings while healthy, none while a loop is stuck (for several intervals), and again afterwards.
    func testPingsStopWhileALoopIsStuckAndResumeAfter() async throws {
        let notifier = RecordingNotifier()
        let log = LogCapture()
        let watchdog = WatchdogService(
            interval: .milliseconds(300), notifier: notifier, probe: makeProbe(),
            logger: Logger(label: "test") { _ in log.handler() })
        let task = Task { try await watchdog.run() }
        defer { task.cancel() }

        try await waitUntil("two pings while healthy") { notifier.pings >= 2 }
        let release = DispatchSemaphore(value: 0)
        group.next().execute { release.wait() }
        // A probe launched just before the stall may still be answered; the check after the next launch finds
        // the loop stuck and says so, in place of a ping. No ping can follow until the loop is free.
        try await waitUntil("the watchdog to withhold a ping") {
            log.entries.contains { $0.message == "Liveness probe not answered; withholding the watchdog ping" }
        }
        let before = notifier.pings
        let named = log.entries.first { $0.level == .error }?.metadata["rpcd_error"] ?? ""
        XCTAssertTrue(named.hasPrefix("no answer from event loop "), "the stuck loop is named: \(named)")
        XCTAssertEqual(notifier.pings, before, "pinged while an event loop was blocked")
        release.signal()
        try await waitUntil("pings to resume") { notifier.pings > before }
        XCTAssertTrue(log.entries.contains { $0.message == "Liveness probe answered again; watchdog pings resume" })
    }

    func testEndsAtGracefulShutdown() async throws {
        let notifier = RecordingNotifier()
        let log = LogCapture()
        let watchdog = WatchdogService(
            interval: .seconds(30), notifier: notifier, probe: makeProbe(),
            logger: Logger(label: "test") { _ in log.handler() })
        let services = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: watchdog)], logger: Logger(label: "test")))
        let running = Task { try await services.run() }
        // Shut down once the watchdog runs (its first words), in its first wait of 10 s.
        try await waitUntil("the watchdog to start") { log.entries.contains { $0.message == "Watchdog enabled" } }
        await services.triggerGracefulShutdown()
        try await running.value
        XCTAssertEqual(notifier.pings, 0)
    }
}
