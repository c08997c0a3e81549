import RPCJSON
import XCTest

@testable import RPCClient

/// How a subscription's notifications become the elements of its sequence (`RPCClientSubscriptions`),
/// without a server: notifications are handed in as `RPCClientHandler` hands them over.
final class ClientSubscriptionTests: XCTestCase {
    private struct Tick: Decodable, Sendable, Equatable {
        var n: Int
    }

    private func subscription(
        buffer: Int = 16
    ) -> (RPCServerNotifications, AsyncThrowingStream<RPCSubscriptionEvent<Tick>, any Error>) {
        let notifications = RPCServerNotifications()
        let subscriptions = RPCClientSubscriptions()
        subscriptions.install(on: notifications)
        let (stream, continuation) = AsyncThrowingStream<RPCSubscriptionEvent<Tick>, any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(buffer))
        subscriptions.add(7, RPCClientSubscriptions.Sink(event: "ticks.tick", continuation: continuation))
        return (notifications, stream)
    }

    private func event(_ seq: Int, _ n: Int, subscription: Int = 7) -> JSONValue {
        ["subscription": .number(subscription), "event": "ticks.tick", "seq": .number(seq), "data": ["n": .number(n)]]
    }

    private func elements(_ stream: AsyncThrowingStream<RPCSubscriptionEvent<Tick>, any Error>, count: Int) async throws -> [String] {
        var seen: [String] = []
        for try await element in stream {
            switch element {
            case .event(let seq, let tick): seen.append("event \(seq) \(tick.n)")
            case .lost(let count): seen.append("lost \(count)")
            case .resubscribed: seen.append("resubscribed")
            }
            if seen.count == count { break }
        }
        return seen
    }

    func testEventsAndLossNoticesBecomeElementsInOrder() async throws {
        let (notifications, stream) = subscription()
        XCTAssertTrue(notifications.deliver(method: "rpc.event", params: event(1, 10)))
        XCTAssertTrue(notifications.deliver(method: "rpc.eventsLost", params: ["subscription": 7, "count": 3]))
        XCTAssertTrue(notifications.deliver(method: "rpc.event", params: event(5, 50)))
        _ = notifications.deliver(method: "rpc.event", params: event(1, 99, subscription: 8))  // another subscription's
        let seen = try await elements(stream, count: 3)
        XCTAssertEqual(seen, ["event 1 10", "lost 3", "event 5 50"])
    }

    func testAConsumerSlowerThanTheBufferGetsAGapMarker() async throws {
        let (notifications, stream) = subscription(buffer: 2)
        for seq in 1...5 { _ = notifications.deliver(method: "rpc.event", params: event(seq, seq)) }
        // The buffer kept the first two; the next three were dropped and are reported before the next event.
        var iterator = stream.makeAsyncIterator()
        _ = try await iterator.next()
        _ = try await iterator.next()
        _ = notifications.deliver(method: "rpc.event", params: event(6, 6))
        var rest: [String] = []
        while rest.count < 2, let element = try await iterator.next() {
            switch element {
            case .event(let seq, _): rest.append("event \(seq)")
            case .lost(let count): rest.append("lost \(count)")
            case .resubscribed: rest.append("resubscribed")
            }
        }
        XCTAssertEqual(rest, ["lost 3", "event 6"])
    }

    func testTheServersEndAndTheConnectionsEndFinishTheSequence() async throws {
        let (notifications, stream) = subscription()
        _ = notifications.deliver(method: "rpc.subscriptionEnded", params: ["subscription": 7, "reason": "service removed"])
        do {
            for try await _ in stream {}
            XCTFail("the sequence ended without an error")
        } catch let error as RPCClientError {
            XCTAssertEqual(error, .subscriptionEnded(event: "ticks.tick", reason: "service removed"))
        }

        let (others, second) = subscription()
        others.connectionEnded()
        do {
            for try await _ in second {}
            XCTFail("the sequence ended without an error")
        } catch let error as RPCClientError {
            XCTAssertEqual(error, .connectionClosed)
        }
    }

    func testAPayloadOfTheWrongShapeEndsTheSequence() async throws {
        let (notifications, stream) = subscription()
        _ = notifications.deliver(method: "rpc.event", params: ["subscription": 7, "seq": 1, "data": "not a tick"])
        do {
            for try await _ in stream {}
            XCTFail("the sequence ended without an error")
        } catch RPCClientError.protocolViolation(let detail) {
            XCTAssertTrue(detail.contains("ticks.tick"), detail)
        }
    }
}
