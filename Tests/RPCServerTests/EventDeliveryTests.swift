import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCJSON
import RPCLogging
import RPCProtocol
@testable import RPCServer
import RPCWire
import XCTest

/// Subscriptions through the connection pipeline the server installs, on an `EmbeddedChannel`: what is
/// written, in which order, and what a peer that stops reading costs.
final class EventDeliveryTests: XCTestCase {
    private var channel: EmbeddedChannel!
    private var router: RPCRouter!
    private var hub: RPCEventHub { router.events }

    private func makeChannel(maxQueuedEvents: Int = 4, maxSubscriptions: Int = 2, idleTimeout: Duration? = nil) throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(services: [TickService(), RPCDiscoverService()]), parser: RPCEnvelopeParser())
        let configuration = RPCServer.Configuration(
            listen: [],
            limits: ConnectionLimits {
                $0.maxSubscriptionsPerConnection = maxSubscriptions
                $0.maxQueuedEvents = maxQueuedEvents
                $0.idleTimeout = idleTimeout
            })
        channel = try PipelineChannel.make(configuration: configuration, router: router)
    }

    override func tearDown() {
        _ = try? channel?.finish()
    }

    private func send(_ payload: String) throws {
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: payload))
    }

    private func outboundFrames() throws -> [String] {
        try PipelineChannel.writtenFrames(channel)
    }

    private func publish(_ values: ClosedRange<Int>) {
        for value in values { hub.publish("ticks.tick", payload: ByteBuffer(string: String(value))) }
        channel.embeddedEventLoop.run()
    }

    private func subscribe() throws {
        try send(#"{"jsonrpc":"2.0","method":"rpc.subscribe","params":["ticks.tick"],"id":1}"#)
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":{"event":"ticks.tick","subscription":1},"id":1}"#])
    }

    /// A registry without the `ticks` service is served: `subscription`, the connection's last, ends.
    private func expectServiceRemovedEnds(subscription: Int) throws {
        router.replaceRegistry(try RPCServiceRegistry(services: [RPCDiscoverService()]))
        channel.embeddedEventLoop.run()
        XCTAssertEqual(
            try outboundFrames(),
            [#"{"jsonrpc":"2.0","method":"rpc.subscriptionEnded","params":{"reason":"service removed","subscription":\#(subscription)}}"#])
        XCTAssertEqual(hub.subscriptions.value, 0)
    }

    private static func event(_ seq: Int, data: Int, subscription: Int = 1) -> String {
        #"{"jsonrpc":"2.0","method":"rpc.event","params":{"subscription":\#(subscription),"event":"ticks.tick","seq":\#(seq),"data":\#(data)}}"#
    }

    func testEventsArriveAsNotificationsUntilUnsubscribed() throws {
        try makeChannel()
        try subscribe()
        publish(10...11)
        XCTAssertEqual(try outboundFrames(), [Self.event(1, data: 10), Self.event(2, data: 11)])
        try send(#"{"jsonrpc":"2.0","method":"rpc.unsubscribe","params":{"subscription":1},"id":2}"#)
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":true,"id":2}"#])
        publish(12...12)
        XCTAssertEqual(try outboundFrames(), [])
        XCTAssertEqual(hub.subscriptions.value, 0)
        XCTAssertEqual(hub.delivered.value, 2)
    }

    func testAPeerThatStopsReadingLosesTheOldestEventsAndIsToldHowMany() throws {
        try makeChannel(maxQueuedEvents: 4)
        try subscribe()
        channel.isWritable = false
        publish(1...10)
        XCTAssertEqual(try outboundFrames(), [], "nothing is written while the peer does not read")
        XCTAssertEqual(hub.lost.value, 6)
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.run()
        XCTAssertEqual(
            try outboundFrames(),
            [#"{"jsonrpc":"2.0","method":"rpc.eventsLost","params":{"count":6,"subscription":1}}"#]
                + (7...10).map { Self.event($0, data: $0) })
    }

    /// A connection's subscriptions to one event share its queue (a publish costs one append per connection,
    /// however often it subscribed), and each still gets every event from its own start, with its own `seq`,
    /// its own loss notice, and its own end.
    func testDuplicateSubscriptionsShareOneQueueAndEachGetsItsEvents() throws {
        try makeChannel(maxQueuedEvents: 4, maxSubscriptions: 3)
        try subscribe()
        publish(1...1)
        try send(#"{"jsonrpc":"2.0","method":"rpc.subscribe","params":["ticks.tick"],"id":2}"#)
        XCTAssertEqual(
            try outboundFrames(),
            [Self.event(1, data: 1), #"{"jsonrpc":"2.0","result":{"event":"ticks.tick","subscription":2},"id":2}"#])
        publish(2...2)
        XCTAssertEqual(try outboundFrames(), [Self.event(2, data: 2), Self.event(1, data: 2, subscription: 2)])
        XCTAssertEqual(hub.subscriptions.value, 2)

        channel.isWritable = false
        publish(3...10)
        XCTAssertEqual(hub.lost.value, 8, "four events lost, to each of the two")
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.run()
        let lost = { (subscription: Int) in
            #"{"jsonrpc":"2.0","method":"rpc.eventsLost","params":{"count":4,"subscription":\#(subscription)}}"#
        }
        XCTAssertEqual(
            try outboundFrames(),
            [lost(1), Self.event(7, data: 7), lost(2), Self.event(6, data: 7, subscription: 2)]
                + (8...10).flatMap { [Self.event($0, data: $0), Self.event($0 - 1, data: $0, subscription: 2)] })

        try send(#"{"jsonrpc":"2.0","method":"rpc.unsubscribe","params":[1],"id":3}"#)
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":true,"id":3}"#])
        publish(11...11)
        XCTAssertEqual(try outboundFrames(), [Self.event(10, data: 11, subscription: 2)])
        try expectServiceRemovedEnds(subscription: 2)
    }

    func testClosingTheConnectionEndsItsSubscriptions() throws {
        try makeChannel()
        try subscribe()
        XCTAssertEqual(hub.subscriptions.value, 1)
        XCTAssertFalse(hub.hasSubscribers("ticks.tick") == false)
        _ = try channel.finish()
        channel = nil
        XCTAssertEqual(hub.subscriptions.value, 0)
        XCTAssertFalse(hub.hasSubscribers("ticks.tick"))
    }

    func testTheSubscriptionLimitHoldsPerConnection() throws {
        try makeChannel(maxSubscriptions: 1)
        try subscribe()
        try send(#"{"jsonrpc":"2.0","method":"rpc.subscribe","params":{"event":"ticks.tick"},"id":2}"#)
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","error":{"code":-32012,"message":"Too many subscriptions","data":{"limit":1}},"id":2}"#])
    }

    func testAConnectionWithSubscriptionsIsNotIdle() throws {
        try makeChannel(idleTimeout: .seconds(5))
        try subscribe()
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        XCTAssertTrue(channel.isActive)
        try send(#"{"jsonrpc":"2.0","method":"rpc.unsubscribe","params":[1],"id":2}"#)
        _ = try outboundFrames()
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        XCTAssertFalse(channel.isActive)
    }

    /// A reload whose registry drops the service ends its subscriptions, telling the client why.
    func testARegistryWithoutTheEventEndsItsSubscriptions() throws {
        try makeChannel()
        try subscribe()
        try expectServiceRemovedEnds(subscription: 1)
        publish(1...1)
        XCTAssertEqual(try outboundFrames(), [])
    }

    /// A reload whose access rules no longer let the peer read the service ends the subscription too.
    func testRulesThatNoLongerAllowTheSubscriberEndItsSubscription() throws {
        try makeChannel()
        try subscribe()
        let closed = RPCAccessPolicy(
            default: RPCAccessRule(allow: [], allowRead: []),
            services: ["rpc": RPCAccessRule(allow: [], allowRead: [.anyone])])
        router.replaceRegistry(try RPCServiceRegistry(services: [TickService(), RPCDiscoverService()], access: closed))
        channel.embeddedEventLoop.run()
        XCTAssertEqual(
            try outboundFrames(),
            [#"{"jsonrpc":"2.0","method":"rpc.subscriptionEnded","params":{"reason":"access rules changed","subscription":1}}"#])
        try send(#"{"jsonrpc":"2.0","method":"rpc.subscribe","params":["ticks.tick"],"id":3}"#)
        XCTAssertEqual(
            try outboundFrames(),
            [#"{"jsonrpc":"2.0","error":{"code":-32007,"message":"Access denied","data":{"method":"ticks.tick"}},"id":3}"#])
    }

    /// The same service in a new registry (a reloaded module) keeps its subscribers, with no gap in `seq`.
    func testARegistryThatKeepsTheEventKeepsItsSubscriptions() throws {
        try makeChannel()
        try subscribe()
        publish(1...1)
        router.replaceRegistry(try RPCServiceRegistry(services: [TickService(), RPCDiscoverService()]))
        publish(2...2)
        XCTAssertEqual(try outboundFrames(), [Self.event(1, data: 1), Self.event(2, data: 2)])
    }
}
