package import JSONRPC
import Logging
package import NIOCore
import RPCLogging
import RPCMetrics
import RPCProtocol
import Synchronization

/// Routes parsed messages to services and assembles their replies.
///
/// Knows nothing of sockets: a connection handler (or a test) parses a frame, calls `dispatch`, and gets the
/// reply payload back on the connection's event loop. Calls of one message run concurrently; a batch reply
/// is sent once every entry has completed. The registry can be replaced at any time (`replaceRegistry`);
/// calls in flight finish on the registry they were routed through.
package final class RPCRouter: Sendable {
    package let parser: RPCEnvelopeParser
    package let statistics: RPCStatistics
    package let callLog: RPCCallLogPolicy
    /// The largest batch reply assembled (its entries' replies together); past it the batch gets -32008.
    package let maxReplySize: Int
    /// Where services publish events and connections subscribe; kept across registry swaps.
    package let events: RPCEventHub
    private let current: Mutex<RPCServiceRegistry>
    /// Refused calls are logged, but no more than this allows: a scan must not flood the journal.
    private let deniedLog = LogRateLimiter(burst: 10, per: .seconds(1))

    package init(
        registry: RPCServiceRegistry, parser: RPCEnvelopeParser, statistics: RPCStatistics = RPCStatistics(),
        callLog: RPCCallLogPolicy = RPCCallLogPolicy(), maxReplySize: Int = RPCLimits.maxFrameSize.defaultValue,
        events: RPCEventHub = RPCEventHub()
    ) {
        self.current = Mutex(registry)
        self.events = events
        events.serve(registry)
        events.export(to: statistics.metrics)
        self.maxReplySize = maxReplySize
        self.parser = parser
        self.statistics = statistics
        self.callLog = callLog
        exportHandlers(to: statistics.metrics)
    }

    /// The turns of `eventLoop`: where work that has had its turn waits for the next.
    package func turns(on eventLoop: any EventLoop) -> RPCLoopTurns {
        RPCLoopTurns.of(eventLoop)
    }

    /// The registry new calls are routed through.
    package var registry: RPCServiceRegistry {
        current.withLock { $0 }
    }

    /// Atomically replaces the registry and returns the previous one. Subscriptions the new registry does not
    /// allow (its event is gone, its access rules refuse the peer) are ended.
    @discardableResult
    package func replaceRegistry(_ registry: RPCServiceRegistry) -> RPCServiceRegistry {
        let previous = current.withLock { active in
            let previous = active
            active = registry
            return previous
        }
        events.serve(registry)
        return previous
    }

    /// Runs every call of `message` and calls `completion` once, on `eventLoop`, with the reply payload, or with
    /// nil when nothing is to be sent (only notifications). Must be called on `eventLoop`. Completion may happen
    /// before this returns.
    ///
    /// A batch runs at most `maxConcurrentCalls` of its entries at once, starting the next as one completes,
    /// so that a connection's in-flight limit holds for batches too. `output` is the connection's write side
    /// for events (`rpc.subscribe`); without it, subscribing fails.
    package func dispatch(
        _ message: RPCMessage, connection: RPCConnectionInfo, eventLoop: any EventLoop,
        maxConcurrentCalls: Int = .max, output: (any RPCConnectionOutput)? = nil, completion: @escaping (ByteBuffer?) -> Void
    ) {
        var clock = eventLoop.now
        let dispatched = dispatch(
            message, connection: connection, eventLoop: eventLoop, clock: &clock, maxConcurrentCalls: maxConcurrentCalls,
            output: output, completion: { { reply in completion(reply?.serialized) } })
        switch dispatched {
        case .answered(let reply): completion(reply.serialized)
        case .nothingToSend: completion(nil)
        case .running: break
        }
    }

    /// `dispatch(_:connection:eventLoop:maxConcurrentCalls:output:completion:)` for a connection's hot path: a
    /// message answered before this returns (a single call to a method that answers at once, or one refused,
    /// or a message that is no call) comes back as `.answered` with its reply unserialized, so that the caller
    /// writes it where it goes; `makeCompletion` is asked for a completion only for calls that answer later
    /// (then the result is `.running`). So the common call costs no closure, no pending state and no buffer.
    ///
    /// `clock` is the caller's latest reading of `eventLoop.now`, taken when it took up the message or after;
    /// a call answered at once is timed from it, and `clock` is then set to when it was answered, so that a
    /// connection reading a burst of calls reads the clock once per call. (By the loop's clock: on an
    /// `EmbeddedEventLoop`, tests decide when time passes.)
    package func dispatch(
        _ message: RPCMessage, connection: RPCConnectionInfo, eventLoop: any EventLoop, clock: inout NIODeadline,
        maxConcurrentCalls: Int = .max, output: (any RPCConnectionOutput)? = nil,
        completion makeCompletion: () -> (RPCReply?) -> Void
    ) -> RPCDispatch {
        let registry = registry
        switch message {
        case .failure(let error):
            // A message answered with an error is a call answered with an error, counted under a fixed label.
            registry.metrics?.invalidMessage.failed(code: error.code, after: nil)
            connection.logger.debug(
                "Unusable message", metadata: [LogField.errorCode: "\(error.code)", LogField.error: "\(error)"])
            clock = eventLoop.now
            return .answered(.error(error, id: nil))
        case .single(.invalid(let id, let error)):
            clock = eventLoop.now
            return .answered(answerInvalid(id: id, error: error, registry: registry, connection: connection))
        case .single(.request(let request)):
            guard let route = route(request, registry: registry, connection: connection) else {
                clock = eventLoop.now
                return refusal(request, registry: registry, connection: connection).map { .answered($0) } ?? .nothingToSend
            }
            switch answerAtOnce(
                request, route: route, clock: &clock, registry: registry, connection: connection, eventLoop: eventLoop,
                output: output)
            {
            case .answered(let reply): return .answered(reply)
            case .nothingToSend: return .nothingToSend
            case .notYet: break
            }
            let context = DispatchContext(
                router: self, registry: registry, connection: connection, eventLoop: eventLoop, output: output)
            context.start(request, route: route, completion: makeCompletion())
            return .running
        case .batch(let entries):
            let collector = BatchCollector(count: entries.count, maxReplySize: maxReplySize, completion: makeCompletion())
            let context = DispatchContext(
                router: self, registry: registry, connection: connection, eventLoop: eventLoop, output: output)
            BatchRunner(entries: entries, window: maxConcurrentCalls, context: context, collector: collector).start()
            return .running
        }
    }
}

/// What `RPCRouter.dispatch` did with a message. (No optional reply: an optional of an enum with payloads is
/// copied and destroyed through its type's metadata, three times the cost of the reply itself.)
package enum RPCDispatch {
    /// Answered before `dispatch` returned, with this reply; no completion was made.
    case answered(RPCReply)
    /// Answered before `dispatch` returned with nothing to send (only notifications); no completion was made.
    case nothingToSend
    /// Its calls run, and the completion gets the reply (perhaps before `dispatch` returned, for a batch).
    case running
}

/// What a step of a call has of its reply before the call runs on: the reply, or that the call is answered
/// with nothing to send (a notification), or nothing yet (the next step decides).
enum ImmediateReply {
    case answered(RPCReply)
    case nothingToSend
    case notYet

    /// A call answered with `reply`; nil is a notification's answer, nothing to send.
    init(_ reply: RPCReply?) {
        self = reply.map { .answered($0) } ?? .nothingToSend
    }
}

// The steps of one call, each written once. They take what the message's calls share (its registry, its
// connection) as parameters rather than in a `DispatchContext`: a call answered at once, nearly every call,
// then borrows them all and makes no context (a struct of its references costs a retain and a release each).
extension RPCRouter {
    /// The reply to an entry that is no request: counted, never run.
    fileprivate func answerInvalid(
        id: RPCID?, error: RPCError, registry: RPCServiceRegistry, connection: RPCConnectionInfo
    ) -> RPCReply {
        connection.account.countCall()
        registry.metrics?.invalidMessage.failed(code: error.code, after: nil)
        return .error(error, id: id)
    }

    /// Counts the call for its peer and finds where it goes; nil when it can go nowhere (no such method, or
    /// refused by the access rules), and `refusal(_:registry:connection:)` answers it. The request is
    /// borrowed, not handed back: a request copied out of its message costs an outlined copy of the message's
    /// enums (bench/README.md, "Issue 39, fourth step").
    fileprivate func route(
        _ request: RPCRequest, registry: RPCServiceRegistry, connection: RPCConnectionInfo
    ) -> RPCServiceRegistry.Route? {
        connection.account.countCall()
        guard let route = registry.route(for: request.method),
              route.allowsAnyPeer || route.access.allows(connection.peer) else { return nil }
        return route
    }

    /// The answer to a request `route(_:registry:connection:)` found nowhere to go: no such method, or refused
    /// by the access rules; counted, and nil for a notification.
    fileprivate func refusal(
        _ request: RPCRequest, registry: RPCServiceRegistry, connection: RPCConnectionInfo
    ) -> RPCReply? {
        guard let route = registry.route(for: request.method) else {
            // Counted under a fixed label: a name a peer made up never becomes a series.
            let error = registry.missingRouteError(for: request.method, administrator: connection.account.isAdministrator)
            registry.metrics?.unknownMethod.failed(code: error.code, after: nil)
            return request.id.map { .error(error, id: $0) }
        }
        route.metrics?.refused()
        return deny(request, connection: connection)
    }

    /// The reply to a call whose method answers at once (`RPCServiceRegistry.Route.atOnce`), timed from `clock`,
    /// which is then set to when it was answered; `.notYet` when the method does not answer at once.
    fileprivate func answerAtOnce(
        _ request: RPCRequest, route: RPCServiceRegistry.Route, clock: inout NIODeadline, registry: RPCServiceRegistry,
        connection: RPCConnectionInfo, eventLoop: any EventLoop, output: (any RPCConnectionOutput)?
    ) -> ImmediateReply {
        guard let atOnce = route.atOnce else { return .notYet }
        let started = clock
        let answer: RPCAnswer
        do {
            let result = try atOnce.result(request) {
                RPCCall(
                    request: request, route: route, connection: connection,
                    eventLoop: eventLoop, registry: registry, output: output, pending: nil)
            }
            clock = eventLoop.now
            let quiet = RPCCallEnding.quietReply(
                result, after: clock - started, request: request, metrics: route.metrics, callLog: callLog)
            guard case .notYet = quiet else { return quiet }
            answer = RPCAnswer(result: result)
        } catch {
            clock = eventLoop.now
            answer = RPCAnswer(failure: error)
        }
        return ImmediateReply(RPCCallEnding(
            request: request, metrics: route.metrics, connection: connection, statistics: statistics, callLog: callLog
        ).reply(answer, after: clock - started))
    }

    /// The answer to a call the access rules refuse: -32007, counted, and logged with the peer and method
    /// (rate limited).
    private func deny(_ request: RPCRequest, connection: RPCConnectionInfo) -> RPCReply? {
        if let suppressed = deniedLog.admit() {
            var metadata: Logger.Metadata = [LogField.method: "\(request.method)"]
            if suppressed > 0 { metadata[LogField.suppressed] = "\(suppressed)" }
            connection.logger.notice("Call refused by the access rules", metadata: metadata)
        }
        return request.id.map { .error(.accessDenied(request.method), id: $0) }
    }
}

/// What a message's calls share once they outlive `dispatch`: a call that answers later, a batch's entries.
private struct DispatchContext {
    let router: RPCRouter
    let registry: RPCServiceRegistry
    let connection: RPCConnectionInfo
    let eventLoop: any EventLoop
    let output: (any RPCConnectionOutput)?

    /// Runs a call that may answer later: `completion` gets its serialized reply, or nil for a notification.
    func start(_ request: RPCRequest, route: RPCServiceRegistry.Route, completion: @escaping (RPCReply?) -> Void) {
        route.metrics?.started()
        let pending = PendingCall(
            eventLoop: eventLoop,
            ending: RPCCallEnding(
                request: request, metrics: route.metrics, connection: connection, statistics: router.statistics,
                callLog: router.callLog),
            completion: completion)
        let call = RPCCall(
            request: request, route: route, connection: connection,
            eventLoop: eventLoop, registry: registry, output: output, pending: pending)
        route.service.handle(call, responder: RPCResponder(pending))
        // Only a call still open when `handle` returns can be cancelled (answers from other threads come back
        // through this loop, so none has arrived yet).
        pending.registerIfOpen()
    }

    /// Runs one entry of a batch; `completion` gets its serialized reply, or nil for a notification.
    func run(_ entry: RPCEntry, completion: @escaping (RPCReply?) -> Void) {
        switch entry {
        case .invalid(let id, let error):
            completion(router.answerInvalid(id: id, error: error, registry: registry, connection: connection))
        case .request(let request):
            guard let route = router.route(request, registry: registry, connection: connection) else {
                return completion(router.refusal(request, registry: registry, connection: connection))
            }
            var clock = eventLoop.now
            switch router.answerAtOnce(
                request, route: route, clock: &clock, registry: registry, connection: connection, eventLoop: eventLoop,
                output: output)
            {
            case .answered(let reply): completion(reply)
            case .nothingToSend: completion(nil)
            case .notYet: start(request, route: route, completion: completion)
            }
        }
    }
}

/// How every call that ran ends, answered at once or later: its outcome counted in its method's series,
/// logged as `RPCCallLogPolicy` says (failures always, slow calls as warnings), and its reply (nil for a
/// notification).
struct RPCCallEnding {
    let request: RPCRequest
    /// The method's series.
    let metrics: RPCMethodMetrics?
    let connection: RPCConnectionInfo
    let statistics: RPCStatistics
    let callLog: RPCCallLogPolicy

    func reply(_ answer: RPCAnswer, after elapsed: TimeAmount) -> RPCReply? {
        reply(answer.outcome, cause: answer.cause, after: elapsed)
    }

    /// `reply(_:after:)` for an answer in its parts, which makes no `RPCAnswer` unless the call is logged.
    func reply(_ outcome: RPCOutcome, cause: (any Error)?, after elapsed: TimeAmount) -> RPCReply? {
        if case .success(let result) = outcome {
            switch Self.quietReply(result, after: elapsed, request: request, metrics: metrics, callLog: callLog) {
            case .answered(let reply): return reply
            case .nothingToSend: return nil
            case .notYet: break
            }
        }
        return loggedReply(RPCAnswer(outcome, cause: cause), after: elapsed)
    }

    /// `reply(_:after:)` for a call that succeeded with `result` quietly (neither slow nor logged, nearly every
    /// call), counted; `.notYet` (nothing counted) for any other. Static, with what it needs borrowed, so that
    /// a call answered at once makes no `RPCCallEnding` (five references retained and released) and no
    /// `RPCAnswer` unless it is logged.
    static func quietReply(
        _ result: ByteBuffer, after elapsed: TimeAmount, request: RPCRequest, metrics: RPCMethodMetrics?,
        callLog: RPCCallLogPolicy
    ) -> ImmediateReply {
        guard !callLog.logEveryCall, callLog.slowCallNanoseconds.map({ elapsed.nanoseconds <= $0 }) ?? true else {
            return .notYet
        }
        metrics?.succeeded(nanoseconds: elapsed.nanoseconds)
        return ImmediateReply(request.id.map { .result(result, id: $0) })
    }

    private func loggedReply(_ answer: RPCAnswer, after elapsed: TimeAmount) -> RPCReply? {
        let slow = callLog.slowCallNanoseconds.map { elapsed.nanoseconds > $0 } ?? false
        switch answer.outcome {
        case .success(let result):
            metrics?.succeeded(nanoseconds: elapsed.nanoseconds)
            if slow {
                connection.rateLimitedLogger?.warning("Slow call", metadata: metadata(elapsed))
            } else if callLog.logEveryCall {
                connection.logger.info("Call completed", metadata: metadata(elapsed))
            }
            return request.id.map { .result(result, id: $0) }
        case .failure(let error):
            metrics?.failed(code: error.code, nanoseconds: elapsed.nanoseconds)
            var metadata = metadata(elapsed)
            metadata[LogField.errorCode] = "\(error.code)"
            if let cause = answer.cause {
                // Clients see only "Internal error"; the cause is for the administrator.
                let description = String(reflecting: cause)
                metadata[LogField.error] = "\(description)"
                statistics.recordError("\(request.method): \(description)")
                connection.rateLimitedLogger?.error("Call failed with an internal error", metadata: metadata)
            } else if slow {
                connection.rateLimitedLogger?.warning("Slow call", metadata: metadata)
            } else {
                // Failed calls are logged whatever LogCalls= says; most are the client's mistake, hence info.
                metadata[LogField.error] = "\(error.message)"
                connection.rateLimitedLogger?.info("Call failed", metadata: metadata)
            }
            return request.id.map { .error(error, id: $0) }
        }
    }

    /// A call cancelled after `elapsed`: counted with its code, logged at debug.
    func cancelled(after elapsed: TimeAmount) {
        metrics?.failed(code: RPCError.Code.callCancelled, nanoseconds: elapsed.nanoseconds)
        connection.logger.debug("Call cancelled", metadata: metadata(elapsed))
    }

    func metadata(_ elapsed: TimeAmount) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            LogField.method: "\(request.method)", LogField.service: "\(request.method.prefix { $0 != "." })",
            LogField.durationMicroseconds: "\(elapsed.nanoseconds / 1000)",
        ]
        if let id = request.id { metadata[LogField.callID] = "\(LogValue.truncated("\(id)"))" }
        return metadata
    }
}

/// Runs a batch's entries in order, at most `window` at once. Confined to the connection's event loop.
///
/// Work whose result is known to be refused is not done: once the replies collected pass the reply size
/// limit, or the connection has ended, the entries not started yet are dropped unrun. And a long batch shares
/// its loop: after a turn (`RPCLoopTurns`), the entries left wait behind the other connections' input.
private final class BatchRunner {
    private let entries: [RPCEntry]
    private let window: Int
    private let context: DispatchContext
    private let collector: BatchCollector
    private var next = 0
    private var running = 0
    /// Set while `fill` starts entries: an entry that completes at once must not start the next one from
    /// inside its completion (a recursion as deep as the batch is long), the loop in `fill` does.
    private var filling = false
    /// A `fill` waits for the next round of the loop's turns.
    private var yielded = false

    init(entries: [RPCEntry], window: Int, context: DispatchContext, collector: BatchCollector) {
        self.entries = entries
        self.window = max(1, window)
        self.context = context
        self.collector = collector
    }

    func start() { fill() }

    private func fill() {
        guard !filling, !yielded else { return }
        filling = true
        defer { filling = false }
        let started = context.eventLoop.now
        while running < window, next < entries.count {
            // Its reply is refused already, or has nobody to go to: the rest is not run.
            if collector.isRefused || context.connection.account.isClosed {
                collector.skip(entries.count - next)
                next = entries.count
                return
            }
            if context.eventLoop.now - started >= RPCLoopTurns.turn {
                yielded = true
                context.router.turns(on: context.eventLoop).yield {
                    self.yielded = false
                    self.fill()
                }
                return
            }
            let index = next
            next += 1
            running += 1
            context.run(entries[index]) { reply in self.finished(index, reply?.serialized) }
        }
    }

    private func finished(_ index: Int, _ reply: ByteBuffer?) {
        running -= 1
        collector.complete(index, reply: reply)
        fill()
    }
}

/// Collects the replies of one batch and sends them as one array once all entries are done.
///
/// The replies together may not pass `maxReplySize` (the frame size limit): a small batch of calls with large
/// results would otherwise make rpcd build a reply many times the size of the request. Past it, what was
/// collected is dropped at once, later replies are discarded as they come, and the batch is answered with
/// -32008 (id `null`). Confined to the connection's event loop.
private final class BatchCollector {
    private var replies: [ByteBuffer?]
    private var outstanding: Int
    private var size = 2
    private var tooLarge = false
    private let maxReplySize: Int
    private let completion: (RPCReply?) -> Void

    init(count: Int, maxReplySize: Int, completion: @escaping (RPCReply?) -> Void) {
        self.replies = Array(repeating: nil, count: count)
        self.outstanding = count
        self.maxReplySize = maxReplySize
        self.completion = completion
    }

    /// The batch's reply is -32008 already: whatever else it would collect is dropped.
    var isRefused: Bool { tooLarge }

    /// `count` entries will not run (the reply is refused already); answers the batch if nothing else runs.
    func skip(_ count: Int) {
        outstanding -= count
        if outstanding == 0 { finish() }
    }

    func complete(_ index: Int, reply: ByteBuffer?) {
        outstanding -= 1
        if !tooLarge, let reply {
            size += reply.readableBytes + 1
            if size > maxReplySize {
                tooLarge = true
                replies = []
            } else {
                replies[index] = reply
            }
        }
        guard outstanding == 0 else { return }
        finish()
    }

    private func finish() {
        if tooLarge {
            var buffer = ByteBuffer()
            RPCReplyWriter.writeError(.replyTooLarge(limit: maxReplySize), id: nil, into: &buffer)
            return completion(.serialized(buffer))
        }
        let present = replies.compactMap { $0 }
        // A batch of notifications only gets no reply at all, not an empty array.
        guard !present.isEmpty else { return completion(nil) }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(present.reduce(2) { $0 + $1.readableBytes + 1 })
        RPCReplyWriter.writeBatch(present, into: &buffer)
        completion(.serialized(buffer))
    }
}
