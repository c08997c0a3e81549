import JSONRPC
import Logging
import NIOCore
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
    /// The turns of each event loop that has had work yield, by the loop's identity (each holds its loop).
    private let loopTurns = Mutex<[ObjectIdentifier: RPCLoopTurns]>([:])

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

    /// The turns of `eventLoop` (made on first use): where work that has had its turn waits for the next.
    package func turns(on eventLoop: any EventLoop) -> RPCLoopTurns {
        loopTurns.withLock { turns in
            let key = ObjectIdentifier(eventLoop)
            if let existing = turns[key] { return existing }
            let made = RPCLoopTurns(eventLoop: eventLoop)
            turns[key] = made
            return made
        }
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
        let maxReplySize = self.maxReplySize
        let context = DispatchContext(
            router: self, registry: registry, connection: connection, eventLoop: eventLoop, output: output,
            statistics: statistics, callLog: callLog, deniedLog: deniedLog)
        switch message {
        case .failure(let error):
            // A message answered with an error is a call answered with an error, counted under a fixed label.
            context.registry.metrics?.invalidMessage.failed(code: error.code, after: nil)
            connection.logger.debug(
                "Unusable message", metadata: [LogField.errorCode: "\(error.code)", LogField.error: "\(error)"])
            var buffer = ByteBuffer()
            RPCReplyWriter.writeError(error, id: nil, into: &buffer)
            completion(buffer)
        case .single(let entry):
            context.run(entry, completion: completion)
        case .batch(let entries):
            let collector = BatchCollector(count: entries.count, maxReplySize: maxReplySize, completion: completion)
            BatchRunner(entries: entries, window: maxConcurrentCalls, context: context, collector: collector).start()
        }
    }
}

/// Everything one message's calls share.
private struct DispatchContext {
    let router: RPCRouter
    let registry: RPCServiceRegistry
    let connection: RPCConnectionInfo
    let eventLoop: any EventLoop
    let output: (any RPCConnectionOutput)?
    let statistics: RPCStatistics
    let callLog: RPCCallLogPolicy
    let deniedLog: LogRateLimiter

    /// Runs one entry; `completion` gets its serialized reply, or nil for a notification.
    func run(_ entry: RPCEntry, completion: @escaping (ByteBuffer?) -> Void) {
        connection.account.countCall()
        let request: RPCRequest
        switch entry {
        case .invalid(let id, let error):
            registry.metrics?.invalidMessage.failed(code: error.code, after: nil)
            var buffer = ByteBuffer()
            RPCReplyWriter.writeError(error, id: id, into: &buffer)
            return completion(buffer)
        case .request(let routed):
            request = routed
        }
        guard let route = registry.route(for: request.method) else {
            // Counted under a fixed label: a name a peer made up never becomes a series.
            let error = registry.missingRouteError(for: request.method)
            registry.metrics?.unknownMethod.failed(code: error.code, after: nil)
            guard let id = request.id else { return completion(nil) }
            var buffer = ByteBuffer()
            RPCReplyWriter.writeError(error, id: id, into: &buffer)
            return completion(buffer)
        }
        guard registry.access.allows(connection.peer, service: route.serviceName, method: route.method) else {
            route.metrics?.refused()
            return deny(request, completion: completion)
        }
        route.metrics?.started()
        let pending = PendingCall(request: request, eventLoop: eventLoop, connection: connection,
                                  metrics: route.metrics, statistics: statistics, callLog: callLog, completion: completion)
        let call = RPCCall(
            request: request, methodIndex: route.methodIndex, method: route.method, connection: connection,
            eventLoop: eventLoop, registry: registry, output: output, pending: pending)
        route.service.handle(call, responder: RPCResponder(pending))
        // Only a call still open when `handle` returns can be cancelled (answers from other threads come back
        // through this loop, so none has arrived yet): most built-in calls are answered by then and never cost
        // the table a hash.
        pending.registerIfOpen()
    }
}

extension DispatchContext {
    /// Answers a call the access rules refuse: -32007, counted, and logged with the peer and method (rate
    /// limited).
    private func deny(_ request: RPCRequest, completion: @escaping (ByteBuffer?) -> Void) {
        if let suppressed = deniedLog.admit() {
            var metadata: Logger.Metadata = [LogField.method: "\(request.method)"]
            if suppressed > 0 { metadata[LogField.suppressed] = "\(suppressed)" }
            connection.logger.notice("Call refused by the access rules", metadata: metadata)
        }
        guard let id = request.id else { return completion(nil) }
        var buffer = ByteBuffer()
        RPCReplyWriter.writeError(.accessDenied(request.method), id: id, into: &buffer)
        completion(buffer)
    }
}

/// The state of one call between routing and reply. Confined to the connection's event loop: completions from
/// other threads hop there first, so the first-completion-wins check needs no lock. A cancelled call
/// (`rpc.cancel`, or its connection ended) is answered -32011 at once, which ends it for the connection's
/// in-flight count; its service learns of it through the handlers it registered (`RPCCall.onCancel`), and its
/// own answer, when it comes, is dropped like any second completion.
final class PendingCall: RPCCompletionSink, @unchecked Sendable {
    private let request: RPCRequest
    private let eventLoop: any EventLoop
    private let connection: RPCConnectionInfo
    private let statistics: RPCStatistics
    /// The method's series: counted when the call ends, whichever way.
    private let metrics: RPCMethodMetrics?
    private let callLog: RPCCallLogPolicy
    private let started = NIODeadline.now()
    private var completion: ((ByteBuffer?) -> Void)?
    /// What the service asked to run on cancellation; nil (no allocation) for the many that ask nothing.
    private var cancelHandlers: [() -> Void]?
    private var cancelled = false
    /// In the connection's `inFlight` table, by id (`registerIfOpen`).
    private var registered = false

    init(request: RPCRequest, eventLoop: any EventLoop, connection: RPCConnectionInfo, metrics: RPCMethodMetrics?,
         statistics: RPCStatistics, callLog: RPCCallLogPolicy, completion: @escaping (ByteBuffer?) -> Void) {
        self.request = request
        self.metrics = metrics
        self.eventLoop = eventLoop
        self.connection = connection
        self.statistics = statistics
        self.callLog = callLog
        self.completion = completion
    }

    func complete(_ outcome: RPCOutcome, _ cause: (any Error)?) {
        if eventLoop.inEventLoop {
            finish(outcome, cause)
        } else {
            eventLoop.execute { self.finish(outcome, cause) }
        }
    }

    /// Puts a call with an id that `handle` left unanswered into the connection's in-flight table, where
    /// `rpc.cancel` and the end of the connection find it. On the connection's event loop.
    func registerIfOpen() {
        guard completion != nil, !cancelled, let id = request.id else { return }
        registered = true
        connection.inFlight.add(id, self)
    }

    /// See `RPCCall.onCancel`. On the connection's event loop.
    func onCancel(_ handler: @escaping () -> Void) {
        if cancelled { return handler() }
        guard completion != nil else { return }  // answered: it can no longer be cancelled
        cancelHandlers = (cancelHandlers ?? []) + [handler]
    }

    /// Answers the call -32011 unless it was answered already, then tells the service. On the connection's
    /// event loop.
    func cancel() {
        guard completion != nil, !cancelled else { return }
        cancelled = true
        let elapsed = NIODeadline.now() - started
        metrics?.failed(code: RPCError.Code.callCancelled, after: .nanoseconds(elapsed.nanoseconds))
        connection.logger.debug("Call cancelled", metadata: callMetadata(elapsed.nanoseconds / 1000))
        let handlers = cancelHandlers ?? []
        cancelHandlers = nil
        finish(.failure(.callCancelled), nil)
        for handler in handlers { handler() }
    }

    private func finish(_ outcome: RPCOutcome, _ cause: (any Error)?) {
        guard let completion else {
            // After a cancellation the service's own answer is expected, and dropped.
            if cancelled { return }
            connection.logger.warning(
                "Call completed more than once; extra completion ignored",
                metadata: [LogField.method: "\(request.method)"])
            return
        }
        self.completion = nil
        if registered, let id = request.id { connection.inFlight.remove(id, self) }
        if cancelled {
            // Not a failure of the service: not logged beyond `cancel`'s debug line, not counted as an error.
            guard let id = request.id else { return completion(nil) }
            var buffer = ByteBuffer()
            RPCReplyWriter.writeError(.callCancelled, id: id, into: &buffer)
            return completion(buffer)
        }
        cancelHandlers = nil
        let elapsed = NIODeadline.now() - started
        let micros = elapsed.nanoseconds / 1000
        let slow = callLog.slowCallThreshold.map { elapsed > TimeAmount($0) } ?? false
        switch outcome {
        case .success(let result):
            metrics?.succeeded(after: .nanoseconds(elapsed.nanoseconds))
            if slow {
                connection.rateLimitedLogger?.warning("Slow call", metadata: callMetadata(micros))
            } else if callLog.logEveryCall {
                connection.logger.info("Call completed", metadata: callMetadata(micros))
            }
            guard let id = request.id else { return completion(nil) }
            var buffer = ByteBuffer()
            buffer.reserveCapacity(result.readableBytes + id.rawJSON.readableBytes + 32)
            RPCReplyWriter.writeResult(result, id: id, into: &buffer)
            completion(buffer)
        case .failure(let error):
            metrics?.failed(code: error.code, after: .nanoseconds(elapsed.nanoseconds))
            var metadata = callMetadata(micros)
            metadata[LogField.errorCode] = "\(error.code)"
            if let cause {
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
            guard let id = request.id else { return completion(nil) }
            var buffer = ByteBuffer()
            RPCReplyWriter.writeError(error, id: id, into: &buffer)
            completion(buffer)
        }
    }

    private func callMetadata(_ micros: Int64) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            LogField.method: "\(request.method)", LogField.service: "\(request.method.prefix { $0 != "." })",
            LogField.durationMicroseconds: "\(micros)",
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
            context.run(entries[index]) { reply in self.finished(index, reply) }
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
    private let completion: (ByteBuffer?) -> Void

    init(count: Int, maxReplySize: Int, completion: @escaping (ByteBuffer?) -> Void) {
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
            return completion(buffer)
        }
        let present = replies.compactMap { $0 }
        // A batch of notifications only gets no reply at all, not an empty array.
        guard !present.isEmpty else { return completion(nil) }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(present.reduce(2) { $0 + $1.readableBytes + 1 })
        RPCReplyWriter.writeBatch(present, into: &buffer)
        completion(buffer)
    }
}
