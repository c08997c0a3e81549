import JSONRPC
import Logging
import NIOCore
import RPCCore
import RPCLogging
import RPCProtocol
import RPCWire

/// Dispatches each frame of one connection through the router and writes the replies, with backpressure.
///
/// Calls run concurrently and are answered as they complete. At most `maxCallsInFlight` calls run at once (a
/// batch runs as many of its entries at a time as there is room for): past that, frames already decoded wait
/// in a queue and the handler stops asking the socket for more (it holds `read()`), so a fast client is slowed
/// down instead of flooding memory or being sent errors. What a frame holds of the peer's account
/// (`PeerAccount`, charged by `FrameReceiver`) is given back once its calls are answered; while they run, the
/// message keeps only what its calls use of the frame (`RPCMessage.retainOnlyWhatCallsUse`). The handler
/// also ends the connection when it is idle with nothing in flight (on `IdleTimeoutHandler`'s event), and
/// when the server quiesces it stops as `ConnectionShutdown` says: what waits or arrives from then on is
/// refused (-32006), the client is told which of its calls were accepted (`rpc.goingAway`), and once the last
/// of those is answered the connection closes.
///
/// What it writes is charged to the peer's account too, until the socket has taken it: a reply the account
/// cannot cover ends the connection (redis' `client-output-buffer-limit`), and a peer that takes nothing for
/// `FrameTimeout=` while replies wait is closed, so unread replies cannot pin memory. Each connection gets
/// turns on its loop (`RPCLoopTurns`): frames that arrive after its turn wait for the next round, behind the
/// other connections' input, so a deep pipeline cannot keep a loop to itself.
///
/// Replies produced while a burst of reads is processed are appended to one output buffer (`ChargedOutput`)
/// and written and flushed together at `channelReadComplete`, so a pipelining client costs one write of one
/// buffer per burst rather than one per call. It frames what it writes itself rather than through an encoder
/// handler: one hop less per reply, and one handler less per connection.
///
/// What runs when, when to read and when to flush is `ConnectionFlow`'s to decide, how the connection ends
/// `ConnectionShutdown`'s: the handler tells them what happens and carries out what they answer.
///
/// It is also the connection's `RPCConnectionOutput`: the event notifications of its subscriptions (made on
/// the first `rpc.subscribe`) are written here, between replies, and a connection with subscriptions is not
/// idle. The subscriptions end when the handler is removed (the connection closed).
///
/// Event-loop confined, like every `ChannelHandler` (`@unchecked Sendable` only to be named as the output in
/// an `RPCCall`, which is used on this loop alone).
///
/// On HTTP listeners (`HTTPConnectionPipeline`) it runs the same way behind the handler that turns requests
/// into messages (`HTTPRequestHandler`), writing one payload per message (`OutputFraming.messages`); a plain
/// HTTP exchange cannot carry events, so it offers no subscriptions there (`eventsAllowed`). After a
/// WebSocket upgrade (`WebSocketPipeline`) it writes text frames itself, as it writes length-prefixed frames
/// (`OutputFraming.webSocket`), behind `WebSocketMessageHandler`.
final class RPCConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let router: RPCRouter
    private let connection: RPCConnectionInfo
    private let limits: ConnectionLimits
    private let account: PeerAccount

    private var context: ChannelHandlerContext?
    /// When frames run, reads go on and replies are flushed.
    ///
    /// `flow` and `shutdown` are state machines: values whose methods take an event and return, calling
    /// nothing outside them, so no access to one can overlap another and the run-time exclusivity check (about
    /// 50 instructions, several times per call) is left out.
    @exclusivity(unchecked) private var flow: ConnectionFlow
    /// The frames `flow` holds back, in arrival order. Changed only through `WaitingFrames`' static methods,
    /// which say why.
    fileprivate var waitingFrames = WaitingFrames()
    /// How the connection ends (the server's shutdown, a refused frame): which messages were accepted, what to
    /// refuse.
    @exclusivity(unchecked) private var shutdown = ConnectionShutdown()
    /// The refused frame's error, answered (by `ProtocolErrorHandler`) once what was read before it is.
    private var refusedFrame: (any Error)?
    /// Replies and events written, charged until the socket takes them.
    private let output: ChargedOutput
    /// Fires `FrameTimeout=` after the peer stopped taking what was written.
    private var stallTimer: Scheduled<Void>?
    /// Made by the first `rpc.subscribe`; most connections never subscribe.
    private var eventSubscriptions: RPCConnectionSubscriptions?

    /// Whether `rpc.subscribe` may make subscriptions: not on an HTTP exchange, whose response is its only way
    /// back to the client.
    private let eventsAllowed: Bool

    init(
        router: RPCRouter, connection: RPCConnectionInfo, limits: ConnectionLimits,
        framing: OutputFraming = .lengthPrefixed, eventsAllowed: Bool = true
    ) {
        self.router = router
        self.connection = connection
        self.flow = ConnectionFlow(maxCallsInFlight: limits.maxCallsPerConnection, turn: RPCLoopTurns.turn)
        self.limits = limits
        self.account = connection.account
        self.output = ChargedOutput(account: connection.account, framing: framing, sent: connection.listener?.sent)
        self.eventsAllowed = eventsAllowed
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        eventSubscriptions?.close()
        eventSubscriptions = nil
        while let frame = WaitingFrames.popFirst(of: self) { account.release(frame.readableBytes) }
        flow.waitingFramesDropped()
        stallTimer?.cancel()
        stallTimer = nil
        output.drop()
        // Nobody waits for these calls any more: their services are told, their replies go nowhere.
        connection.inFlight.cancelAll()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.inFlight.cancelAll()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        frameArrived(unwrapInboundIn(data), context: context)
    }

    /// One whole frame (or message), handed on by `FrameReceiver` directly; charged its length to the account,
    /// which gets it back when its calls are answered. After the handler is removed it is dropped.
    func frameArrived(_ frame: ByteBuffer) {
        guard let context else { return account.release(frame.readableBytes) }
        frameArrived(frame, context: context)
    }

    private func frameArrived(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        // Stopping (PROTOCOL.md §4, "Shutdown"): what arrives is not run; it is answered -32006 while the output
        // is open, and read on regardless, so that nothing unread makes the close a reset.
        guard shutdown.phase == .serving else { return refuse(frame, context: context) }
        let writable = context.channel.isWritable
        switch flow.frameRead(now: clock(context), writable: writable) {
        case .run:
            process(frame, context: context)
        case .wait:
            // A cancellation must not wait behind the calls it is meant to end: it runs at once, uncounted.
            var message = router.parser.parse(frame)
            if message.isCancellation {
                let charge = Self.keepOnlyWhatCallsUse(of: &message, frame: frame)
                run(message, frameSize: frame.readableBytes, charge: charge, context: context)
            } else {
                WaitingFrames.append(Self.compacted(frame), to: self)
                perform(flow.frameQueued(now: clock(context), writable: writable), context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flow.readBurstEnded()
        flushIfPending()
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if flow.readRequested(writable: context.channel.isWritable, shutdown: shutdown.phase) { context.read() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ConnectionIdleEvent where flow.isQuiet && (eventSubscriptions?.count ?? 0) == 0:
            connection.logger.debug("Closing idle connection")
            context.close(promise: nil)
        case is ChannelShouldQuiesceEvent:
            for action in shutdown.stop(quiet: flow.isQuiet) { perform(action, context: context) }
            resumeHeldRead(context: context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// A refused frame (too large, over the peer's budget, too slow) ends the stream, but not before the calls
    /// read ahead of it are answered (`ConnectionShutdown`): the refusal goes on to `ProtocolErrorHandler`, which
    /// answers it and closes, once they are. Other errors go on at once.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard shutdown.phase == .serving, refusedFrame == nil, ProtocolErrorHandler.endsTheStream(error) else {
            return context.fireErrorCaught(error)
        }
        refusedFrame = error
        if let action = shutdown.refuseFrame(quiet: flow.isQuiet) { perform(action, context: context) }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The peer read what we had queued for it: serve the frames held back, and read again.
        if context.channel.isWritable {
            stallTimer?.cancel()
            stallTimer = nil
            drainWaitingFrames(context: context)
            eventSubscriptions?.resume()
        } else if stallTimer == nil {
            stallTimer = context.eventLoop.scheduleTask(in: TimeAmount(limits.frameTimeout)) { [self] in
                stallTimer = nil
                guard let context = self.context, !context.channel.isWritable else { return }
                connection.rateLimitedLogger?.notice("Peer took no replies within FrameTimeout=; closing connection")
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    /// The loop's clock, as `flow` last read it within this turn when it has.
    private func now(_ context: ChannelHandlerContext) -> NIODeadline {
        flow.latestReading.map(NIODeadline.uptimeNanoseconds) ?? context.eventLoop.now
    }

    /// The same, as the flow takes it.
    private func clock(_ context: ChannelHandlerContext) -> ConnectionFlow.Instant {
        flow.latestReading ?? context.eventLoop.now.uptimeNanoseconds
    }

    private func process(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        var message = router.parser.parse(frame)
        let charge = Self.keepOnlyWhatCallsUse(of: &message, frame: frame)
        shutdown.accept(message)
        run(message, frameSize: frame.readableBytes, charge: charge, context: context)
    }

    /// A frame read while stopping: not run, answered -32006 while the output is open (`ConnectionShutdown`).
    /// An `rpc.cancel` still runs: it reaches only calls of this connection, and ends them sooner.
    private func refuse(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        let size = frame.readableBytes
        guard shutdown.phase == .stopping else { return account.release(size) }
        let message = router.parser.parse(frame)
        if message.isCancellation {
            return run(message, frameSize: size, charge: 0, context: context)
        }
        account.release(size)
        if let reply = ConnectionShutdown.refusal(of: message) {
            _ = output.write(reply, to: context, holding: 0)
            if !flow.holdsFlushes { flushIfPending() }
        }
    }

    private func perform(_ action: ConnectionShutdown.Action, context: ChannelHandlerContext) {
        switch action {
        case .refuseWaiting:
            flow.waitingFramesDropped()
            while let frame = WaitingFrames.popFirst(of: self) { refuse(frame, context: context) }
        case .announce(let accepted, let lastID):
            // An HTTP exchange has no place for it: NIO's pipeline handler ends the connection after the
            // response in progress, saying `Connection: close`.
            guard output.framing != .messages else { return }
            _ = output.write(ConnectionShutdown.goingAway(accepted: accepted, lastID: lastID), to: context, force: true)
            if !flow.holdsFlushes { flushIfPending() }
        case .close:
            connection.logger.debug("Closing connection for shutdown")
            // The last reply may be held for the end of a burst or a delivery that the close would cut short;
            // and a close fails the writes the socket has not taken yet, so it waits for them (an empty write
            // completes after every write before it).
            flushIfPending()
            // On HTTP, what it writes are responses, and NIO's pipeline handler ends the connection after the last.
            guard output.framing != .messages else { return context.close(promise: nil) }
            let channel = context.channel
            let written = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(NIOAny(ByteBuffer()), promise: written)
            let framing = output.framing
            written.futureResult.whenComplete { [weak self] _ in
                guard framing == .lengthPrefixed, let context = self?.context else { return channel.close(promise: nil) }
                // The output first: the client reads every reply, then its end of file, and closes; what it sent
                // meanwhile is read and dropped, so no unread input turns the close into a reset that could
                // overtake the replies. One that does not close is closed after `HTTPConnectionRefusal.linger`.
                let closed = context.eventLoop.makePromise(of: Void.self)
                context.close(mode: .output, promise: closed)
                closed.futureResult.whenComplete { result in
                    guard case .success = result else { return channel.close(promise: nil) }
                    channel.eventLoop.scheduleTask(in: HTTPConnectionRefusal.linger) { channel.close(promise: nil) }
                }
            }
        case .answerRefusal:
            flushIfPending()
            if let refusedFrame { context.fireErrorCaught(refusedFrame) }
        }
    }

    /// What of the frame's length the calls of `message`, parsed from it, keep (`RPCMessage.retainOnlyWhatCallsUse`).
    /// Judged by the storage the frame is a slice of, not by the frame: a small frame may share a whole read,
    /// and a call that kept a slice of it would keep all of it alive while charged for a few bytes.
    private static func keepOnlyWhatCallsUse(of message: inout RPCMessage, frame: ByteBuffer) -> Int {
        let held = max(frame.readableBytes, frame.storageCapacity)
        return min(frame.readableBytes, message.retainOnlyWhatCallsUse(frameSize: held))
    }

    /// A frame to queue, in storage of its own when it shares a larger read: what waits is what is charged.
    private static func compacted(_ frame: ByteBuffer) -> ByteBuffer {
        guard frame.storageCapacity > 2 * frame.readableBytes else { return frame }
        var own = ByteBufferAllocator().buffer(capacity: frame.readableBytes)
        var frame = frame
        own.writeBuffer(&frame)
        return own
    }

    /// Runs a message's calls. Most calls answer at once (every built-in method but a few): their reply is
    /// written into the output before this returns, with no completion made; the others complete later.
    private func run(_ message: RPCMessage, frameSize: Int, charge: Int, context: ChannelHandlerContext) {
        // The frame holds its length of the account (`FrameReceiver`); its calls keep what they retain.
        if charge < frameSize { account.release(frameSize - charge) }
        // Runs with room for one call at least, or for a cancellation (weight 0); a batch gets the room there is.
        let weight = flow.callsStarted(message.callCount)
        var clock = now(context)
        let dispatched = router.dispatch(
            message, connection: connection, eventLoop: context.eventLoop, clock: &clock, maxConcurrentCalls: weight,
            output: self
        ) {
            { [self] reply in
                if let reply {
                    complete(weight: weight, charge: charge, reply: reply)
                } else {
                    completeWithNothingToSend(weight: weight, charge: charge)
                }
            }
        }
        switch dispatched {
        case .answered(let reply):
            flow.dispatched(answeredAt: clock.uptimeNanoseconds)
            complete(weight: weight, charge: charge, reply: reply)
        case .nothingToSend:
            flow.dispatched(answeredAt: clock.uptimeNanoseconds)
            completeWithNothingToSend(weight: weight, charge: charge)
        case .running:
            flow.dispatched(answeredAt: nil)
        }
    }

    /// A message's calls are answered: its slots are free, and what its frame holds of the account goes to the
    /// reply.
    private func complete(weight: Int, charge: Int, reply: RPCReply) {
        flow.callsAnswered(weight: weight)
        guard let context else {  // the connection is gone; the reply has nowhere to go
            account.release(charge)
            return
        }
        replyWritten(output.write(reply, to: context, holding: charge), context: context)
    }

    /// A message's calls are answered with nothing to send (only notifications): their slots are free, and what
    /// the frame holds of the account goes back, or to the empty answer an HTTP request still gets.
    private func completeWithNothingToSend(weight: Int, charge: Int) {
        flow.callsAnswered(weight: weight)
        guard let context, output.framing == .messages else {
            account.release(charge)
            if let context { finishedCalls(context: context) }
            return
        }
        replyWritten(output.write(ByteBuffer(), to: context, force: false, holding: charge), context: context)
    }

    /// After a reply's write: one the account refused ends the connection; one written is flushed, unless a
    /// burst or a delivery holds the flush for its end.
    private func replyWritten(_ written: Bool, context: ChannelHandlerContext) {
        guard written else {
            // Made already, and more than the peer may have held for it: ending the connection frees it.
            connection.rateLimitedLogger?.notice(
                "Replies not taken by the peer fill its share of MaxBufferedBytesPerPeer=; closing connection",
                metadata: [LogField.limit: "\(account.shareLimit)"])
            context.close(promise: nil)
            return
        }
        if !flow.holdsFlushes { flushIfPending() }
        finishedCalls(context: context)
    }

    private func finishedCalls(context: ChannelHandlerContext) {
        // With nothing waiting, a drain would do nothing: the reply is flushed above or at the end of the burst.
        if flow.drainWanted { drainWaitingFrames(context: context) }
        closeIfQuiescedAndQuiet()
    }

    private func drainWaitingFrames(context: ChannelHandlerContext) {
        // Calls answered at once call back in here; the flow runs one drain at a time.
        guard flow.drainBegan(now: clock(context)) else { return }
        // Once stopping, nothing waits: what did was refused (`ConnectionShutdown`).
        while flow.nextWaitingFrame(now: clock(context), writable: context.channel.isWritable, runsMessages: shutdown.runsMessages),
            let frame = WaitingFrames.popFirst(of: self)
        {
            process(frame, context: context)
        }
        perform(flow.drainEnded(now: clock(context), writable: context.channel.isWritable), context: context)
        resumeHeldRead(context: context)
    }

    private func resumeHeldRead(context: ChannelHandlerContext) {
        if flow.heldReadResumes(writable: context.channel.isWritable, shutdown: shutdown.phase) { context.read() }
    }

    private func perform(_ actions: ConnectionFlow.Actions, context: ChannelHandlerContext) {
        if actions.contains(.scheduleTurn) { scheduleNextTurn(context: context) }
        if actions.contains(.flush) { flushIfPending() }
    }

    private func flushIfPending() {
        guard let context else { return }
        output.flush(context)
    }

    /// Serves the waiting frames in the loop's next round of turns, after its other connections' input.
    private func scheduleNextTurn(context: ChannelHandlerContext) {
        router.turns(on: context.eventLoop).yield { [self] in
            flow.turnGranted()
            guard let context = self.context else { return }
            drainWaitingFrames(context: context)
        }
    }

    private func closeIfQuiescedAndQuiet() {
        guard let context, let action = shutdown.answered(quiet: flow.isQuiet) else { return }
        perform(action, context: context)
    }
}

extension RPCConnectionHandler: RPCConnectionOutput, @unchecked Sendable {
    var isWritable: Bool { context?.channel.isWritable ?? false }

    /// Events were charged while queued (`RPCEventQueue`); on the way out they are charged as output,
    /// which cannot refuse them: the queue let them go only while the connection was writable.
    func writeUnsolicited(_ payload: ByteBuffer) {
        guard let context else { return }
        _ = output.write(payload, to: context, force: true)
    }

    /// Inside a read burst or a drain the flush waits for its end, as replies' do.
    func flushUnsolicited() {
        if !flow.holdsFlushes { flushIfPending() }
    }

    /// The answers complete their calls (`complete`), whose replies `flow` holds until they all have.
    func deliver(_ answers: ArraySlice<RPCConnectionAnswer>) {
        let began = flow.answersArrived()
        for answer in answers { answer.complete() }
        if began, flow.answersDelivered() { flushIfPending() }
    }

    var subscriptions: RPCConnectionSubscriptions? {
        if let eventSubscriptions { return eventSubscriptions }
        guard eventsAllowed, let context else { return nil }
        let made = RPCConnectionSubscriptions(
            connection: connection, eventLoop: context.eventLoop, output: self, hub: router.events, limits: limits)
        eventSubscriptions = made
        return made
    }
}

extension RPCMessage {
    /// Whether this is a single `rpc.cancel` (request or notification).
    var isCancellation: Bool {
        if case .single(.request(let request)) = self { return request.method == RPCCancellation.method }
        return false
    }

    /// How many calls this message occupies for the in-flight limit: a batch counts each entry.
    var callCount: Int {
        if case .batch(let entries) = self { return entries.count }
        return 1
    }
}

/// A connection's queue of frames waiting for room: it allocates nothing until the first frame waits, since
/// most connections never queue and idle connections are counted in thousands. `ConnectionFlow` counts them
/// and says when one runs.
///
/// The handler changes its queue only through `append(_:to:)` and `popFirst(of:)`, which take the queue out
/// of the handler, change it, and put it back. Why not a `mutating` call on the handler's stored property:
/// that is an access spanning a call (into the queue's storage), and one such access anywhere makes Swift
/// check exclusivity at run time on every access to the property. Read and assigned only, the property's
/// accesses provably never overlap, and the optimizer drops the checks. (`ConnectionFlow`'s events call
/// nothing, so the handler calls them in place.)
private struct WaitingFrames {
    private var frames: CircularBuffer<ByteBuffer>?

    /// Queues `frame` behind the frames `handler` holds.
    static func append(_ frame: ByteBuffer, to handler: RPCConnectionHandler) {
        change(handler) { queue in
            if queue.frames == nil { queue.frames = CircularBuffer(initialCapacity: 4) }
            queue.frames!.append(frame)
        }
    }

    /// The first of the frames `handler` holds, taken off its queue.
    static func popFirst(of handler: RPCConnectionHandler) -> ByteBuffer? {
        change(handler) { queue in queue.frames?.popFirst() }
    }

    /// Changes `handler`'s queue out of place. The handler's copy is cleared before the change, so that the
    /// queue being changed is the only reference to its storage, which is then changed without being copied.
    private static func change<Result>(
        _ handler: RPCConnectionHandler, _ body: (inout WaitingFrames) -> Result
    ) -> Result {
        var queue = handler.waitingFrames
        handler.waitingFrames = WaitingFrames()
        defer { handler.waitingFrames = queue }
        return body(&queue)
    }
}
