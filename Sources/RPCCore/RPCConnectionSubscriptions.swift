package import NIOCore
import RPCLogging
package import RPCProtocol

/// One call's answer that arrived from elsewhere (a module host's, over its link), as its connection is handed
/// it. A struct rather than a bare closure: kept in an array, a closure is re-abstracted, which allocates.
package struct RPCConnectionAnswer: Sendable {
    /// Completes the call: gives back what the answer held and hands it to the call's responder.
    package let complete: @Sendable () -> Void

    package init(complete: @escaping @Sendable () -> Void) {
        self.complete = complete
    }
}

/// The write side of one connection for frames the server sends unasked (events) and for answers that arrive
/// together from elsewhere, implemented by the connection handler. Used only on the connection's event loop.
package protocol RPCConnectionOutput: AnyObject, Sendable {
    /// Whether the peer is reading: false once NIO's outbound buffer passed its high-water mark. The
    /// handler calls `RPCConnectionSubscriptions.resume()` when it becomes writable again.
    var isWritable: Bool { get }
    /// Writes one frame payload (the handler frames it); `flushUnsolicited` sends what was written.
    func writeUnsolicited(_ payload: ByteBuffer)
    func flushUnsolicited()
    /// The connection's subscriptions, made on the first `rpc.subscribe` (most connections never subscribe,
    /// and pay nothing for it); nil once the connection is gone (a batch entry may run after that).
    var subscriptions: RPCConnectionSubscriptions? { get }
    /// Runs `answers`, in order, as one burst of the connection's: their replies leave in one write at its end
    /// (or at the end of the connection's own burst, when it is inside one), not one each (redis' output
    /// buffer, per burst rather than per reply). A module host's answers of one read of its link come this way.
    /// Each runs even when the connection is gone.
    func deliver(_ answers: ArraySlice<RPCConnectionAnswer>)
}

/// The subscriptions of one connection (`rpc.subscribe`, `rpc.unsubscribe`), at most `maxSubscriptions`; its
/// subscriptions to one event share one queue of `maxQueuedEvents` (`RPCEventQueue`). Ended all at once when
/// the connection closes (`close`).
///
/// Confined to the connection's event loop; `@unchecked Sendable` only so that its loop-bound owner can be
/// named in `Sendable` types (`RPCCall`).
package final class RPCConnectionSubscriptions: @unchecked Sendable {
    let connection: RPCConnectionInfo
    let eventLoop: any EventLoop
    private let hub: RPCEventHub
    private let maxSubscriptions: Int
    private let maxQueuedEvents: Int
    weak var output: (any RPCConnectionOutput)?
    /// Each subscription's queue, by subscription id.
    private var active: [Int: RPCEventQueue] = [:]
    /// The queues, by full event name.
    private var queues: [String: RPCEventQueue] = [:]
    private var nextID = 1

    package init(
        connection: RPCConnectionInfo, eventLoop: any EventLoop, output: any RPCConnectionOutput, hub: RPCEventHub,
        limits: ConnectionLimits = ConnectionLimits()
    ) {
        self.connection = connection
        self.eventLoop = eventLoop
        self.output = output
        self.hub = hub
        self.maxSubscriptions = limits.maxSubscriptionsPerConnection
        self.maxQueuedEvents = limits.maxQueuedEvents
    }

    /// Subscriptions open on this connection.
    package var count: Int { active.count }

    /// Subscribes to `event` (`service.event`) as declared in `registry` (the one the call was routed
    /// through), if its access rules let this peer read that service. Returns the subscription's id.
    package func subscribe(_ event: String, registry: RPCServiceRegistry) throws(RPCError) -> Int {
        eventLoop.preconditionInEventLoop()
        guard let route = registry.events[event] else {
            throw .invalidParams("no event '\(event)' (rpc.discover lists them under x-events)")
        }
        guard registry.access.allowsSubscribing(connection.peer, service: route.serviceName) else {
            throw .accessDenied(event)
        }
        guard active.count < maxSubscriptions else { throw .tooManySubscriptions(limit: maxSubscriptions) }
        let queue: RPCEventQueue
        if let shared = queues[event] {
            queue = shared
        } else {
            queue = RPCEventQueue(event: event, owner: self, capacity: maxQueuedEvents, hub: hub)
            // The registry was swapped since the call was routed, and the new one has no such event.
            guard hub.add(queue) else { throw .invalidParams("no event '\(event)' (rpc.discover lists them under x-events)") }
            queues[event] = queue
        }
        let id = nextID
        nextID += 1
        queue.add(id)
        active[id] = queue
        hub.subscriptions.increment()
        return id
    }

    /// Ends subscription `id` of this connection; false when there is none (ended already, or never made).
    package func unsubscribe(_ id: Int) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard let queue = active.removeValue(forKey: id) else { return false }
        hub.subscriptions.increment(by: -1)
        if !queue.remove(id) {
            queue.end()
            hub.remove(queue)
            queues[queue.event] = nil
        }
        return true
    }

    /// The connection can be written again: send what queued up meanwhile.
    package func resume() {
        for queue in queues.values { queue.drain() }
    }

    /// The connection is gone: every subscription ends, silently.
    package func close() {
        for queue in queues.values {
            queue.end()
            hub.remove(queue)
        }
        hub.subscriptions.increment(by: -active.count)
        active = [:]
        queues = [:]
    }

    /// The hub ended `queue` (reload, access rules): each of its subscriptions' clients is told, unless it
    /// unsubscribed meanwhile.
    func endedByServer(_ queue: RPCEventQueue, reason: String) {
        guard queues[queue.event] === queue else { return }
        queues[queue.event] = nil
        let ids = queue.ids
        for id in ids { active[id] = nil }
        hub.subscriptions.increment(by: -ids.count)
        connection.logger.info(
            "Subscription ended by the server", metadata: [LogField.event: "\(queue.event)", LogField.reason: "\(reason)"])
        guard let output else { return }
        for id in ids { output.writeUnsolicited(RPCEventFrame.subscriptionEnded(subscription: id, reason: reason)) }
        output.flushUnsolicited()
    }
}
