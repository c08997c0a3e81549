import NIOCore
import RPCBinding
import RPCJSON
import RPCProtocol
import Synchronization

/// What a subscription yields: an event, or a gap marker saying how many events were lost just before the
/// next one (the server dropped them for a subscriber that fell behind, or this client's buffer was full).
public enum RPCSubscriptionEvent<Payload: Sendable>: Sendable {
    /// One event: its `seq` (counting from 1 per subscription; lost events leave a gap) and payload.
    case event(seq: Int, payload: Payload)
    /// `count` events were lost before the next `.event`.
    case lost(count: Int)
    /// The connection broke, or the server restarted (`rpc.goingAway`), and the client subscribed again on a
    /// new connection: events published in between may have been missed and are not counted, and `seq` starts
    /// again from 1.
    case resubscribed
}

/// The events of one subscription, as an `AsyncSequence`. Iterate it from one task; cancelling that task (or
/// dropping the sequence) unsubscribes. When the connection breaks or the server restarts, the client
/// subscribes again as soon as it can connect (retrying with a growing pause, up to 2 s) and yields
/// `.resubscribed` before the new events.
/// The sequence ends by throwing `.subscriptionEnded` when the server ends the subscription (reload, access
/// rules), `.connectionClosed` when the client is closed, `.remote` when subscribing again is refused (the
/// daemon came back without the event), and `.protocolViolation` when an event's payload does not decode as
/// `Payload`.
public struct RPCEventSubscription<Payload: Sendable>: AsyncSequence, Sendable {
    public typealias Element = RPCSubscriptionEvent<Payload>
    /// The full event name, `kv.changed`.
    public let event: String
    /// The server's id of the subscription on the connection it was first made on.
    public let id: Int
    let stream: AsyncThrowingStream<Element, any Error>

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Element, any Error>.AsyncIterator

        public mutating func next() async throws(RPCClientError) -> Element? {
            do {
                return try await base.next()
            } catch let error as RPCClientError {
                throw error
            } catch {
                // Cancellation of the iterating task ends the sequence quietly.
                return nil
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }
}

extension RPCClient {
    /// Events a client buffers for a consumer slower than the connection, per subscription; past it the
    /// newest are dropped and counted (a `.lost` gap marker). As many as the server's default queue.
    public static let subscriptionBufferSize = RPCLimits.maxQueuedEvents.defaultValue

    /// Subscribes to `event` (`kv.changed`, as `rpc.discover` lists it under `x-events`) and returns its events
    /// with payloads decoded as `Payload` (`JSONValue` takes any). Throws `.remote` with the server's refusal:
    /// -32602 for an unknown event, -32007 when the access rules do not allow it, -32012 past the
    /// connection's subscription limit.
    public func subscribe<Payload: Decodable & Sendable>(
        to event: String, as payload: Payload.Type = JSONValue.self, timeout: Duration? = nil
    ) async throws(RPCClientError) -> RPCEventSubscription<Payload> {
        let first = try await subscribeOnce(to: event, as: payload, timeout: timeout)
        let (stream, continuation) = AsyncThrowingStream<RPCSubscriptionEvent<Payload>, any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(Self.subscriptionBufferSize))
        let forwarding = Task { [weak self] in
            var current = first
            while true {
                do throws(RPCClientError) {
                    for try await element in current { continuation.yield(element) }
                    return continuation.finish()  // the consumer went away (its task was cancelled)
                } catch .connectionClosed {
                    guard let self, let next = await self.resubscribe(to: event, as: payload, timeout: timeout, continuation) else {
                        return
                    }
                    current = next
                    continuation.yield(.resubscribed)
                } catch {
                    return continuation.finish(throwing: error)
                }
            }
        }
        continuation.onTermination = { _ in forwarding.cancel() }
        return RPCEventSubscription(event: event, id: first.id, stream: stream)
    }

    /// Subscribes again after the connection broke, retrying while no connection can be made; nil (with
    /// `continuation` finished) when the client was closed, the consumer went away or the server refused.
    private func resubscribe<Payload: Decodable & Sendable>(
        to event: String, as payload: Payload.Type, timeout: Duration?,
        _ continuation: AsyncThrowingStream<RPCSubscriptionEvent<Payload>, any Error>.Continuation
    ) async -> RPCEventSubscription<Payload>? {
        var pause = Duration.milliseconds(50)
        while !Task.isCancelled {
            do throws(RPCClientError) {
                return try await subscribeOnce(to: event, as: payload, timeout: timeout)
            } catch .connectFailed, .timedOut, RPCClientHandler.notRun {
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
            } catch {
                continuation.finish(throwing: error)
                return nil
            }
        }
        continuation.finish()
        return nil
    }

    /// One subscription on one connection of the pool: its events come there, and end with it.
    private func subscribeOnce<Payload: Decodable & Sendable>(
        to event: String, as payload: Payload.Type, timeout: Duration?
    ) async throws(RPCClientError) -> RPCEventSubscription<Payload> {
        // Subscribing twice on a connection that then ends leaves nothing behind: idempotent.
        try await again(RPCCallOptions(timeout: timeout, idempotent: true)) { connection, remaining throws(RPCClientError) in
            try await connection.subscribe(to: event, as: payload, id: reserveIDs(1), timeout: remaining) {
                [weak self] in self?.reserveIDs(1) ?? 0
            }
        }
    }
}

extension RPCConnection {
    /// `RPCClient.subscribe` on this connection; `nextID` gives the id of the `rpc.unsubscribe` call.
    func subscribe<Payload: Decodable & Sendable>(
        to event: String, as payload: Payload.Type, id: Int, timeout: Duration?,
        nextID: @escaping @Sendable () -> Int
    ) async throws(RPCClientError) -> RPCEventSubscription<Payload> {
        subscriptions.install(on: notifications)
        let (stream, continuation) = AsyncThrowingStream<RPCSubscriptionEvent<Payload>, any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(RPCClient.subscriptionBufferSize))
        let sink = RPCClientSubscriptions.Sink(event: event, continuation: continuation)

        let request = RPCRequestEncoding.request(method: "rpc.subscribe", params: ["event": .string(event)], id: id)
        let promise = channel.eventLoop.makePromise(of: JSONValue.self)
        // Registered on the event loop as the reply is read, before the next frame (which may be an event of
        // this subscription) is: no event can arrive unrouted.
        let registered = promise.futureResult.flatMapThrowing { [subscriptions] result -> Int in
            guard let subscription = result["subscription"]?.intValue else {
                throw RPCClientError.protocolViolation("rpc.subscribe answered without a subscription id: \(RPCReply.abbreviated(result))")
            }
            subscriptions.add(subscription, sink)
            return subscription
        }
        send(.call(id: id, payload: channel.allocator.buffer(bytes: request), promise: promise, timeout: timeout.map(TimeAmount.init)),
             failing: promise)
        let subscription = try await Self.result(of: registered)
        continuation.onTermination = { [weak self, subscriptions] _ in
            // Still registered: the consumer ended it (cancelled, dropped the sequence, or a payload did not
            // decode), so tell the server. The server's or the connection's end unregistered it already.
            guard subscriptions.remove(subscription), let self, self.isConnected else { return }
            Task {
                _ = try? await self.call(
                    "rpc.unsubscribe", params: ["subscription": .number(subscription)], id: nextID(), timeout: nil)
            }
        }
        return RPCEventSubscription(event: event, id: subscription, stream: stream)
    }
}

/// The subscriptions of one client connection, by id: routes `rpc.event`, `rpc.eventsLost` and
/// `rpc.subscriptionEnded` to their sequences. Thread-safe; notifications arrive on the connection's loop.
final class RPCClientSubscriptions: Sendable {
    /// Where one subscription's notifications go, its payload type erased.
    struct Sink: Sendable {
        let event: String
        let deliver: @Sendable (Int, JSONValue?) -> Void
        let lost: @Sendable (Int) -> Void
        let finish: @Sendable (RPCClientError) -> Void

        init<Payload: Decodable & Sendable>(
            event: String, continuation: AsyncThrowingStream<RPCSubscriptionEvent<Payload>, any Error>.Continuation
        ) {
            self.event = event
            // Dropped for want of buffer room, not yet reported as a gap.
            let unreported = Mutex(0)
            let yield: @Sendable (RPCSubscriptionEvent<Payload>) -> Void = { element in
                let pending = unreported.withLock { $0 }
                if pending > 0, case .enqueued = continuation.yield(.lost(count: pending)) {
                    unreported.withLock { $0 -= pending }
                }
                if case .dropped = continuation.yield(element) { unreported.withLock { $0 += 1 } }
            }
            deliver = { seq, data in
                do {
                    let payload = try JSONValueDecoder().decode(Payload.self, from: data ?? .null)
                    yield(.event(seq: seq, payload: payload))
                } catch {
                    continuation.finish(
                        throwing: RPCClientError.protocolViolation(
                            "an event of \(event) does not decode as \(Payload.self): \(error)"))
                }
            }
            lost = { count in yield(.lost(count: count)) }
            finish = { error in continuation.finish(throwing: error) }
        }
    }

    private struct State {
        var installed = false
        var sinks: [Int: Sink] = [:]
    }

    private let state = Mutex(State())

    /// Registers the notification handlers, once.
    func install(on notifications: RPCServerNotifications) {
        let first = state.withLock { state -> Bool in
            defer { state.installed = true }
            return !state.installed
        }
        guard first else { return }
        notifications.handle("rpc.event") { [self] params in
            guard let (_, sink) = sink(for: params), let seq = params?["seq"]?.intValue else { return }
            sink.deliver(seq, params?["data"])
        }
        notifications.handle("rpc.eventsLost") { [self] params in
            guard let (_, sink) = sink(for: params), let count = params?["count"]?.intValue else { return }
            sink.lost(count)
        }
        notifications.handle("rpc.subscriptionEnded") { [self] params in
            guard let (id, sink) = sink(for: params) else { return }
            remove(id)
            sink.finish(.subscriptionEnded(event: sink.event, reason: params?["reason"]?.stringValue ?? "unknown"))
        }
        notifications.onConnectionEnded { [self] in
            let all = state.withLock { state in
                defer { state.sinks = [:] }
                return state.sinks.values
            }
            for sink in all { sink.finish(.connectionClosed) }
        }
    }

    func add(_ id: Int, _ sink: Sink) {
        state.withLock { $0.sinks[id] = sink }
    }

    /// Unregisters subscription `id`; false when it was not registered (any more).
    @discardableResult
    func remove(_ id: Int) -> Bool {
        state.withLock { $0.sinks.removeValue(forKey: id) } != nil
    }

    /// Subscriptions open now (for tests).
    var count: Int { state.withLock { $0.sinks.count } }

    private func sink(for params: JSONValue?) -> (Int, Sink)? {
        guard let id = params?["subscription"]?.intValue, let sink = state.withLock({ $0.sinks[id] }) else { return nil }
        return (id, sink)
    }
}
