import NIOCore
import RPCProtocol
import Synchronization

/// A connection's queue of one event: bounded, between the publishers (any thread) and the connection's event
/// loop, which writes each queued event as an `rpc.event` notification to every subscription the connection
/// holds to that event.
///
///     publish ──▶ enqueue (lock; drop the oldest when full) ──▶ RPCLoopDrainer: one loop.execute per burst
///                                                               │          for all of the loop's queues
///     socket ◀── rpc.eventsLost (if any) + rpc.event … ◀────────┘ while the channel is writable
///
/// A publisher never waits: it takes the queue's lock for an append and schedules a drain only when none is
/// pending (through its loop's drainer, so a publish reaching many connections on one loop costs that loop
/// one task, not one per connection). Drains take turns on the loop as calls do (`RPCLoopDrainer`). A connection's subscriptions to the same event share its queue: a
/// publish costs one append and one charge per connection, however many times it subscribed, and the event is
/// held once (duplicate subscriptions cost a frame each as they are written, and a slot of
/// `MaxSubscriptionsPerConnection=`, nothing more). The drain writes while the channel is writable; when the
/// client stops reading (NIO's outbound buffer past its high-water mark) the queue fills, then each new event
/// drops the oldest, and the next frame of each subscription is `rpc.eventsLost` with the count. The queue is
/// full at `capacity` events or when the peer's account (`PeerAccount`, charged each queued event's bytes)
/// has no room for the next: events are counted by bytes, so large events cannot pin more than the peer's
/// share. Events carry the queue's sequence number; a subscription's `seq` counts from its own start, lost
/// events included, so a gap is visible too.
final class RPCEventQueue: Sendable {
    /// The full event name, `service.event`.
    let event: String
    /// Whose queue it is (its peer is what the access rules judge on a reload).
    let connection: RPCConnectionInfo
    let eventLoop: any EventLoop
    private let capacity: Int
    private let account: PeerAccount
    private let hub: RPCEventHub
    private let drainer: RPCLoopDrainer
    /// The connection's subscriptions; only touched on `eventLoop`.
    private let owner: NIOLoopBound<RPCConnectionSubscriptions>
    /// The subscriptions the queue serves, in the order they were made; only touched on `eventLoop`.
    private let subscribers: NIOLoopBoundBox<[Subscriber]>
    private let queue: Mutex<Queue>

    /// One `rpc.subscribe` of the connection to the event.
    private struct Subscriber {
        let id: Int
        /// The queue's sequence number before this subscription's first event: its `seq` is the queue's minus this.
        let base: Int
        /// The queue's sequence number of the last event written (or counted lost) to it.
        var sent: Int
    }

    private struct Queue {
        var events: CircularBuffer<(seq: Int, payload: ByteBuffer)>
        var lastSeq = 0
        /// How many subscriptions share the queue (each lost event is lost to each of them).
        var sharing = 0
        /// A drain is scheduled, or waits for the channel to become writable: publishers need not schedule one.
        var draining = false
        var ended = false
    }

    init(event: String, owner: RPCConnectionSubscriptions, capacity: Int, hub: RPCEventHub) {
        self.event = event
        self.connection = owner.connection
        self.eventLoop = owner.eventLoop
        self.capacity = capacity
        self.account = owner.connection.account
        self.hub = hub
        self.drainer = hub.drainer(for: owner.eventLoop)
        self.owner = NIOLoopBound(owner, eventLoop: owner.eventLoop)
        self.subscribers = NIOLoopBoundBox([], eventLoop: owner.eventLoop)
        // Room for one: an idle subscription should cost little; the buffer grows up to `capacity` if needed.
        self.queue = Mutex(Queue(events: CircularBuffer(initialCapacity: 1)))
    }

    /// The subscription ids the queue serves. On `eventLoop`.
    var ids: [Int] { subscribers.value.map(\.id) }

    /// Serves subscription `id` from the next event on. On `eventLoop`.
    func add(_ id: Int) {
        let base = queue.withLock { queue in
            queue.sharing += 1
            return queue.lastSeq
        }
        subscribers.value.append(Subscriber(id: id, base: base, sent: base))
    }

    /// Stops serving subscription `id`; whether others still share the queue. On `eventLoop`.
    func remove(_ id: Int) -> Bool {
        subscribers.value.removeAll { $0.id == id }
        queue.withLock { $0.sharing -= 1 }
        return !subscribers.value.isEmpty
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
                hub.lost.increment(by: queue.sharing)
                if !charged { charged = account.charge(bytes) }
            }
            if charged {
                queue.events.append((queue.lastSeq, payload))
            } else {
                hub.lost.increment(by: queue.sharing)  // larger than what the peer has left, even with its queue empty
            }
            guard !queue.draining else { return false }
            queue.draining = true
            return true
        }
        if schedule { drainer.schedule(self) }
    }

    /// Writes what is queued while the connection can take it, until `deadline`: past it the rest waits for the
    /// loop's next round (`RPCLoopDrainer.postpone`), as a connection's pipeline does, so that a fan-out to
    /// many subscriptions keeps the loop a turn at a time. On `eventLoop`.
    func drain(until deadline: NIODeadline? = nil) {
        let deadline = deadline ?? drainer.now() + RPCLoopTurns.turn
        let owner = self.owner.value
        guard let output = owner.output else { return }
        var wrote = false
        defer { if wrote { output.flushUnsolicited() } }
        while true {
            guard output.isWritable else { return }  // the writability change drains again (`resume`)
            guard drainer.now() < deadline else { return drainer.postpone(self) }
            let next = queue.withLock { queue -> (seq: Int, payload: ByteBuffer)? in
                guard !queue.ended, let event = queue.events.popFirst() else {
                    queue.draining = false
                    return nil
                }
                // From here the connection's output holds it, and charges it (`writeUnsolicited`).
                account.release(event.payload.readableBytes)
                return event
            }
            guard let next else { return }
            for index in subscribers.value.indices {
                let subscriber = subscribers.value[index]
                guard next.seq > subscriber.base else { continue }  // queued before this subscription was made
                if next.seq > subscriber.sent + 1 {
                    output.writeUnsolicited(RPCEventFrame.eventsLost(subscription: subscriber.id, count: next.seq - subscriber.sent - 1))
                }
                output.writeUnsolicited(
                    RPCEventFrame.event(subscription: subscriber.id, name: event, seq: next.seq - subscriber.base, data: next.payload))
                subscribers.value[index].sent = next.seq
                hub.delivered.increment()
                wrote = true
            }
        }
    }

    /// No more events: the connection's last subscription to it ended, or the connection closed. Any thread.
    func end() {
        queue.withLock { queue in
            queue.ended = true
            for event in queue.events { account.release(event.payload.readableBytes) }
            queue.events.removeAll()
        }
    }

    /// The server ends the connection's subscriptions to the event (see `RPCEventHub.serve`): the client is
    /// told why. Any thread.
    func endedByServer(reason: String) {
        end()
        eventLoop.execute { self.owner.value.endedByServer(self, reason: reason) }
    }
}

/// Runs the drains of one event loop's queues: publishers hand it the queues that got events, and it runs them
/// all in one task on the loop, scheduled once per burst, for at most a turn (`RPCLoopTurns.turn`); queues
/// that did not finish in it drain in the loop's next round. Thread-safe (`schedule`); one per event loop, kept
/// by the hub for the daemon's life.
final class RPCLoopDrainer: @unchecked Sendable {
    let eventLoop: any EventLoop
    private let waiting = Mutex<(queues: [RPCEventQueue], scheduled: Bool)>(([], false))
    private let turns: RPCLoopTurns
    /// Queues that had their turn and drain in the next round; only touched on `eventLoop`.
    private var postponed: [RPCEventQueue] = []

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.turns = RPCLoopTurns.of(eventLoop)
    }

    /// Any thread.
    func schedule(_ queue: RPCEventQueue) {
        let first = waiting.withLock { waiting -> Bool in
            waiting.queues.append(queue)
            defer { waiting.scheduled = true }
            return !waiting.scheduled
        }
        if first { eventLoop.execute { self.drainWaiting() } }
    }

    /// The loop's clock, by which turns are measured.
    func now() -> NIODeadline {
        turns.now()
    }

    /// `queue` had its turn with events left: it drains again in the next round. On `eventLoop`.
    func postpone(_ queue: RPCEventQueue) {
        postponed.append(queue)
        guard postponed.count == 1 else { return }
        turns.yield { [self] in
            let due = postponed
            postponed = []
            drain(due)
        }
    }

    private func drainWaiting() {
        let due = waiting.withLock { waiting in
            defer {
                waiting.queues.removeAll(keepingCapacity: true)
                waiting.scheduled = false
            }
            return waiting.queues
        }
        drain(due)
    }

    private func drain(_ queues: [RPCEventQueue]) {
        let deadline = now() + RPCLoopTurns.turn
        for queue in queues { queue.drain(until: deadline) }
    }
}
