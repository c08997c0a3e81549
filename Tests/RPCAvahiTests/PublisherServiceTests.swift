import Logging
import RPCDNSSD
import ServiceLifecycle
import XCTest

@testable import RPCAvahi

final class PublisherServiceTests: XCTestCase {
    private let calc = RPCAdvertisement(service: "calc", version: "1.0.0", fingerprint: "0123456789abcdef", protocolVersion: 1)

    func testNoopPublisherShowsWhatWouldBeOnTheNetwork() async {
        let publisher = NoopServicePublisher()
        publisher.publish([calc])
        XCTAssertEqual(publisher.advertisements, [], "nothing is out before start")
        publisher.start()
        XCTAssertEqual(publisher.advertisements, [calc])
        publisher.publish([])
        XCTAssertEqual(publisher.advertisements, [])
        publisher.publish([calc])
        await publisher.stop()
        XCTAssertEqual(publisher.advertisements, [], "stop withdraws everything")
    }

    func testServiceRunsThePublisherUntilGracefulShutdownThenWithdraws() async throws {
        let publisher = NoopServicePublisher()
        publisher.publish([calc])
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: PublisherService(publisher: publisher))], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // Poll (bounded) until the service has started the publisher.
            for _ in 0..<1000 where publisher.advertisements.isEmpty {
                try await Task.sleep(for: .milliseconds(5))
            }
            XCTAssertEqual(publisher.advertisements, [calc])
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        XCTAssertEqual(publisher.advertisements, [])
    }
}
