import Logging
import RPCSystemd
import RPCTestSupport
import ServiceLifecycle
import Synchronization
import XCTest

/// `StartupTimeout` and `NotifyStatusService`: what systemd hears while starting, running and stopping.
final class NotificationServiceTests: XCTestCase {
    func testSlowWorkExtendsTheStartTimeoutUntilItIsDone() async throws {
        let notifier = RecordingNotifier()
        let release = DispatchSemaphore(value: 0)
        let timeout = StartupTimeout(notifier: notifier, period: .milliseconds(50))
        let work = Task { try await timeout.extending { release.wait(); return 42 } }
        try await waitUntil("two extensions") {
            notifier.sent.filter { $0.first == .extendTimeout(microseconds: 100_000) }.count >= 2
        }
        release.signal()
        let value = try await work.value
        XCTAssertEqual(value, 42)
        let after = notifier.sent.count
        // An extension that does not come is no event, and StartupTimeout takes no clock a test could advance:
        // three periods, each of which would have sent one.
        try await Task.sleep(for: .milliseconds(150))
        XCTAssertEqual(notifier.sent.count, after, "no extension once the work is done")
    }

    func testQuickWorkSendsNothing() async throws {
        let notifier = RecordingNotifier()
        let value = try await StartupTimeout(notifier: notifier, period: .seconds(5)).extending { "done" }
        XCTAssertEqual(value, "done")
        XCTAssertEqual(notifier.sent, [])
    }

    func testStatusIsSentWhenItChangesAndStoppingAtShutdown() async throws {
        let notifier = RecordingNotifier()
        let text = Mutex("Serving 1 services")
        let service = NotifyStatusService(
            notifier: notifier, interval: .milliseconds(20), status: { text.withLock { $0 } })
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: service)], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        try await waitUntil("the first status") { notifier.sent.contains([.status("Serving 1 services")]) }
        text.withLock { $0 = "Serving 2 services" }
        try await waitUntil("the changed status") { notifier.sent.contains([.status("Serving 2 services")]) }
        XCTAssertEqual(notifier.sent.filter { $0 == [.status("Serving 1 services")] }.count, 1, "unchanged text is not resent")
        await group.triggerGracefulShutdown()
        try await running.value
        XCTAssertEqual(notifier.sent.last, [.stopping, .status("Stopping: finishing calls in flight")])
    }
}
