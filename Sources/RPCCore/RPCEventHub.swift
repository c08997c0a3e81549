package import NIOCore
import RPCJSON
package import RPCMetrics
package import Synchronization

/// Where events meet their subscribers: services publish `service.event` payloads here, connections
/// subscribe here, keyed by the full event name.
///
/// One hub serves the daemon for its whole life; reloads do not replace it, so a subscription outlives the
/// module instance that emits (a reloaded module whose service stays keeps its subscribers). `publish` never
/// blocks and never waits for a subscriber: it appends the payload to the bounded queue each subscribed
/// connection holds for the event (`RPCEventQueue`, one per connection however often it subscribed), which
/// the connection's event loop drains. When the router serves a new
/// registry, subscriptions to events it no longer declares, or that its access rules no longer allow, are
/// ended (`rpc.subscriptionEnded`). Thread-safe: publish from any thread.
package final class RPCEventHub: Sendable {
    private struct State {
        /// The queues of subscribed connections, by full event name. Arrays are copied out under the lock (a reference count, not a
        /// copy), so publishing holds the lock only for a dictionary lookup.
        var subscribers: [String: [RPCEventQueue]] = [:]
        /// The registry served now: what may be subscribed to, and by whom.
        var registry: RPCServiceRegistry?
        /// One drainer per event loop that has subscribers, by the loop's identity.
        var drainers: [ObjectIdentifier: RPCLoopDrainer] = [:]
    }

    private let state = Mutex(State())
    /// Events published (by any service, whether anyone subscribed).
    package let published = Atomic<Int>(0)
    /// Event frames written to subscribers.
    package let delivered = Atomic<Int>(0)
    /// Events dropped from full subscription queues (`MaxQueuedEvents=`).
    package let lost = Atomic<Int>(0)
    /// Subscriptions open now, across connections.
    package let subscriptions = Atomic<Int>(0)

    package init() {}

    /// Exports the hub's counts through `metrics` (the daemon's, once).
    package func export(to metrics: RPCMetrics) {
        metrics.export(.eventsPublished, counter: { self.published.value })
        metrics.export(.eventsDelivered, counter: { self.delivered.value })
        metrics.export(.eventsLost, counter: { self.lost.value })
        metrics.export(.subscriptions, gauge: { self.subscriptions.value })
    }

    /// Sends `payload` (one JSON value) to every subscriber of `event` (`service.event`). Never blocks.
    package func publish(_ event: String, payload: ByteBuffer) {
        published.increment()
        guard let subscribers = state.withLock({ $0.subscribers[event] }) else { return }
        for queue in subscribers { queue.enqueue(payload) }
    }

    /// Whether anyone subscribes to `event` now (a service can skip building a payload nobody reads).
    package func hasSubscribers(_ event: String) -> Bool {
        state.withLock { $0.subscribers[event] != nil }
    }

    /// The drainer of `eventLoop`'s subscriptions (made on first use).
    func drainer(for eventLoop: any EventLoop) -> RPCLoopDrainer {
        state.withLock { state in
            let key = ObjectIdentifier(eventLoop)
            if let drainer = state.drainers[key] { return drainer }
            let drainer = RPCLoopDrainer(eventLoop: eventLoop)
            state.drainers[key] = drainer
            return drainer
        }
    }

    /// Registers `queue` unless the registry served now no longer declares its event (it changed since the
    /// `rpc.subscribe` call was routed); returns whether it was registered.
    func add(_ queue: RPCEventQueue) -> Bool {
        state.withLock { state -> Bool in
            if let registry = state.registry, registry.events[queue.event] == nil { return false }
            state.subscribers[queue.event, default: []].append(queue)
            return true
        }
    }

    func remove(_ queue: RPCEventQueue) {
        state.withLock { state in
            guard var list = state.subscribers[queue.event], let index = list.firstIndex(where: { $0 === queue }) else { return }
            list.remove(at: index)
            state.subscribers[queue.event] = list.isEmpty ? nil : list
        }
    }

    /// The router serves `registry` from now on: subscriptions it no longer allows end, with the reason.
    func serve(_ registry: RPCServiceRegistry) {
        let ended = state.withLock { state -> [(RPCEventQueue, String)] in
            state.registry = registry
            var ended: [(RPCEventQueue, String)] = []
            for (event, list) in state.subscribers {
                var kept: [RPCEventQueue] = []
                for subscription in list {
                    if let reason = Self.endReason(subscription, event: event, registry: registry) {
                        ended.append((subscription, reason))
                    } else {
                        kept.append(subscription)
                    }
                }
                state.subscribers[event] = kept.isEmpty ? nil : kept
            }
            return ended
        }
        for (queue, reason) in ended { queue.endedByServer(reason: reason) }
    }

    private static func endReason(_ subscription: RPCEventQueue, event: String, registry: RPCServiceRegistry) -> String? {
        guard let route = registry.events[event] else {
            return registry.service(named: route(event)) == nil ? "service removed" : "event no longer declared"
        }
        guard registry.access.allowsSubscribing(subscription.connection.peer, service: route.serviceName) else {
            return "access rules changed"
        }
        return nil
    }

    private static func route(_ event: String) -> String {
        String(event.prefix { $0 != "." })
    }
}
