import NIOCore
import RPCProtocol
import Synchronization

/// One client's subscription to one event: a bounded queue between the publishers (any thread) and the
/// connection's event loop, which writes the queued events as `rpc.event` notifications.
///
///     publish ──▶ enqueue (lock; drop the oldest when full) ──▶ RPCLoopDrainer: one loop.execute per burst
///                                                               │          for all of the loop's subscriptions
///     socket ◀── rpc.eventsLost (if any) + rpc.event … ◀────────┘ while the channel is writable
///
/// A publisher never waits: it takes the queue's lock for an append and schedules a drain only when none is
/// pending (through its loop's drainer, so a publish reaching many subscribers on one loop costs that loop
/// one task, not one per subscriber). The drain writes while the channel is writable; when the client stops
/// reading (NIO's outbound buffer past its high-water mark) the queue fills, then each new event drops the
/// oldest, and the next frame the client gets is `rpc.eventsLost` with the count. The queue is full at
/// `capacity` events or when the peer's account (`PeerAccount`, charged each queued event's bytes) has no room
/// for the next: events are counted by bytes, so large events cannot pin more than the peer's share. `seq`
/// counts the events published to the subscription from 1, lost ones included, so a gap is visible too.
final class RPCEventSubscription: Sendable {
    let id: Int
    /// The full event name, `service.event`.
    let event: String
    /// Whose subscription it is (its peer is what the access rules judge on a reload).
    let connection: RPCConnectionInfo
    let eventLoop: any EventLoop
    private let capacity: Int
    private let account: PeerAccount
    private let hub: RPCEventHub
    private let drainer: RPCLoopDrainer
    /// The connection's subscriptions; only touched on `eventLoop`.
    private let owner: NIOLoopBound<RPCConnectionSubscriptions>
    private let queue: Mutex<Queue>

    private struct Queue {
        var events: CircularBuffer<(seq: Int, payload: ByteBuffer)>
        var lastSeq = 0
        var lost = 0
        /// A drain is scheduled, or waits for the channel to become writable: publishers need not schedule one.
        var draining = false
        var ended = false
    }

    init(id: Int, event: String, owner: RPCConnectionSubscriptions, capacity: Int, hub: RPCEventHub) {
        self.id = id
        self.event = event
        self.connection = owner.connection
        self.eventLoop = owner.eventLoop
        self.capacity = capacity
        self.account = owner.connection.account
        self.hub = hub
        self.drainer = hub.drainer(for: owner.eventLoop)
        self.owner = NIOLoopBound(owner, eventLoop: owner.eventLoop)
        // Room for one: an idle subscription should cost little; the buffer grows up to `capacity` if needed.
        self.queue = Mutex(Queue(events: CircularBuffer(initialCapacity: 1)))
    }

    /// Called by publishers, from any thread.
    func enqueue(_ payload: ByteBuffer) {
        let bytes = payload.readableBytes
        let schedule = queue.withLock { queue -> Bool in
            guard !queue.ended else { return false }
            queue.lastSeq += 1
            // The oldest make room, in number and in the peer's account.
            var charged = account.charge(bytes)
            while !charged || queue.events.count >= capacity, let oldest = queue.events.popFirst() {
                account.release(oldest.payload.readableBytes)
                queue.lost += 1
                hub.lost.increment()
                if !charged { charged = account.charge(bytes) }
            }
            if charged {
                queue.events.append((queue.lastSeq, payload))
            } else {
                queue.lost += 1  // larger than what the peer has left, even with its queue empty
                hub.lost.increment()
            }
            guard !queue.draining else { return false }
            queue.draining = true
            return true
        }
        if schedule { drainer.schedule(self) }
    }

    /// Writes what is queued while the connection can take it. On `eventLoop`.
    func drain() {
        let owner = self.owner.value
        guard let output = owner.output else { return }
        // At most one queue's worth per turn, so a publisher as fast as the loop cannot keep it here forever.
        var budget = capacity
        var wrote = false
        defer { if wrote { output.flushUnsolicited() } }
        while budget > 0 {
            guard output.isWritable else { return }  // the writability change drains again (`resume`)
            let next = queue.withLock { queue -> (lost: Int, event: (seq: Int, payload: ByteBuffer)?) in
                let lost = queue.lost
                queue.lost = 0
                guard !queue.ended, let event = queue.events.popFirst() else {
                    queue.draining = false
                    return (lost, nil)
                }
                // From here the connection's output holds it, and charges it (`writeUnsolicited`).
                account.release(event.payload.readableBytes)
                return (lost, event)
            }
            if next.lost > 0 {
                output.writeUnsolicited(RPCEventFrame.eventsLost(subscription: id, count: next.lost))
                wrote = true
            }
            guard let event = next.event else { return }
            output.writeUnsolicited(RPCEventFrame.event(subscription: id, name: self.event, seq: event.seq, data: event.payload))
            hub.delivered.increment()
            wrote = true
            budget -= 1
        }
        drainer.schedule(self)
    }

    /// No more events: the client unsubscribed or the connection closed. Any thread.
    func end() {
        queue.withLock { queue in
            queue.ended = true
            for event in queue.events { account.release(event.payload.readableBytes) }
            queue.events.removeAll()
        }
    }

    /// The server ends the subscription (see `RPCEventHub.serve`): the client is told why. Any thread.
    func endedByServer(reason: String) {
        end()
        eventLoop.execute { self.owner.value.endedByServer(self, reason: reason) }
    }
}

/// Runs the drains of one event loop's subscriptions: publishers hand it the subscriptions that got events,
/// and it runs them all in one task on the loop, scheduled once per burst. Thread-safe; one per event loop,
/// kept by the hub for the daemon's life.
final class RPCLoopDrainer: Sendable {
    let eventLoop: any EventLoop
    private let waiting = Mutex<(subscriptions: [RPCEventSubscription], scheduled: Bool)>(([], false))

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Any thread.
    func schedule(_ subscription: RPCEventSubscription) {
        let first = waiting.withLock { waiting -> Bool in
            waiting.subscriptions.append(subscription)
            defer { waiting.scheduled = true }
            return !waiting.scheduled
        }
        if first { eventLoop.execute { self.drainWaiting() } }
    }

    private func drainWaiting() {
        let due = waiting.withLock { waiting in
            defer {
                waiting.subscriptions.removeAll(keepingCapacity: true)
                waiting.scheduled = false
            }
            return waiting.subscriptions
        }
        for subscription in due { subscription.drain() }
    }
}
