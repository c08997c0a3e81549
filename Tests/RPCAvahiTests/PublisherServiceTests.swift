import Logging
import RPCDNSSD
import RPCTestSupport
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
            try await waitUntil("the service to start the publisher") { !publisher.advertisements.isEmpty }
            XCTAssertEqual(publisher.advertisements, [calc])
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        XCTAssertEqual(publisher.advertisements, [])
    }
}
