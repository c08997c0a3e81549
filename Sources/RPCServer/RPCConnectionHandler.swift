import JSONRPC
import Logging
import NIOCore
import RPCCore
import RPCProtocol
import RPCWire

/// Dispatches each frame of one connection through the router and writes the replies, with backpressure.
///
/// Calls run concurrently and are answered as they complete. At most `maxCallsInFlight` calls run at once (a
/// batch runs as many of its entries at a time as there is room for): past that, frames already decoded wait
/// in a queue and the handler stops asking the socket for more (it holds `read()`), so a fast client is slowed
/// down instead of flooding memory or being sent errors. Each frame's share of `MaxBufferedBytes=` is given
/// back once its calls are answered; while they run, the message keeps only what its calls use of the frame
/// (`RPCMessage.retainingOnlyWhatCallsUse`). The handler also ends the connection when it is idle with nothing in flight (on
/// `IdleTimeoutHandler`'s event) and when the server quiesces (once the last call has been answered).
///
/// Replies produced while a burst of reads is processed are flushed together at `channelReadComplete`, so a
/// pipelining client costs one `writev` per burst rather than one per call. It frames what it writes itself
/// (`LengthPrefixedFrameEncoder.write(_:framedTo:promise:)`) rather than through an encoder handler: one hop
/// less per reply, and one handler less per connection.
///
/// It is also the connection's `RPCConnectionOutput`: the event notifications of its subscriptions (made on
/// the first `rpc.subscribe`) are written here, between replies, and a connection with subscriptions is not
/// idle. The subscriptions end when the handler is removed (the connection closed).
///
/// Event-loop confined, like every `ChannelHandler` (`@unchecked Sendable` only to be named as the output in
/// an `RPCCall`, which is used on this loop alone).
final class RPCConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let router: RPCRouter
    private let connection: RPCConnectionInfo
    private let maxCallsInFlight: Int
    private let budget: InboundByteBudget
    private let limits: ConnectionLimits

    private var context: ChannelHandlerContext?
    private var callsInFlight = 0
    /// Frames decoded while the in-flight limit was reached, in arrival order.
    private var waitingFrames = WaitingFrames()
    /// The pipeline asked to read while we were at the limit; honoured once there is room again.
    private var readHeld = false
    /// Set while replies should be batched into one flush (inside a read burst or a queue drain).
    private var batchingFlushes = false
    private var flushPending = false
    private var draining = false
    private var quiescing = false
    /// Made by the first `rpc.subscribe`; most connections never subscribe.
    private var eventSubscriptions: RPCConnectionSubscriptions?

    init(router: RPCRouter, connection: RPCConnectionInfo, limits: ConnectionLimits, budget: InboundByteBudget) {
        self.router = router
        self.connection = connection
        self.maxCallsInFlight = limits.maxCallsPerConnection
        self.budget = budget
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        eventSubscriptions?.close()
        eventSubscriptions = nil
        while let frame = waitingFrames.popFirst() { budget.release(frame.readableBytes) }
        // Nobody waits for these calls any more: their services are told, their replies go nowhere.
        connection.inFlight.cancelAll()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.inFlight.cancelAll()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        batchingFlushes = true
        if callsInFlight >= maxCallsInFlight || !waitingFrames.isEmpty || !context.channel.isWritable {
            // A cancellation must not wait behind the calls it is meant to end: it runs at once, uncounted.
            let parsed = parse(frame)
            if parsed.message.isCancellation {
                run(parsed.message, frameSize: frame.readableBytes, charge: parsed.charge, eventLoop: context.eventLoop)
            } else {
                waitingFrames.append(frame)
            }
        } else {
            process(frame, eventLoop: context.eventLoop)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        batchingFlushes = false
        flushIfPending()
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if hasRoom {
            context.read()
        } else {
            readHeld = true
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ConnectionIdleEvent where isQuiet && (eventSubscriptions?.count ?? 0) == 0:
            connection.logger.debug("Closing idle connection")
            context.close(promise: nil)
        case is ChannelShouldQuiesceEvent:
            quiescing = true
            closeIfQuiescedAndQuiet()
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The peer read what we had queued for it: serve the frames held back, and read again.
        if context.channel.isWritable {
            drainWaitingFrames(context: context)
            eventSubscriptions?.resume()
        }
        context.fireChannelWritabilityChanged()
    }

    /// Whether to read more: room for calls, nothing queued, and the peer reading its replies. A peer that
    /// stops reading fills the socket, then NIO's outbound buffer to its high-water mark; from then on nothing
    /// more of its input is read or run until it drains, so it cannot make rpcd hold replies without bound.
    private var hasRoom: Bool {
        callsInFlight < maxCallsInFlight && waitingFrames.isEmpty && !quiescing && (context?.channel.isWritable ?? true)
    }
    private var isQuiet: Bool { callsInFlight == 0 && waitingFrames.isEmpty }

    private func process(_ frame: ByteBuffer, eventLoop: any EventLoop) {
        let parsed = parse(frame)
        run(parsed.message, frameSize: frame.readableBytes, charge: parsed.charge, eventLoop: eventLoop)
    }

    /// The message, and what of the frame's length its calls keep (`RPCMessage.retainingOnlyWhatCallsUse`).
    private func parse(_ frame: ByteBuffer) -> (message: RPCMessage, charge: Int) {
        let (message, retained) = router.parser.parse(frame).retainingOnlyWhatCallsUse(frameSize: frame.readableBytes)
        return (message, min(frame.readableBytes, retained))
    }

    private func run(_ message: RPCMessage, frameSize: Int, charge: Int, eventLoop: any EventLoop) {
        // The frame holds its length of the budget (`FrameReceiver`); its calls keep what they retain.
        if charge < frameSize { budget.release(frameSize - charge) }
        // Runs with room for one call at least, or for a cancellation (weight 0); a batch gets the room there is.
        let weight = max(0, min(message.callCount, maxCallsInFlight - callsInFlight))
        callsInFlight += weight
        router.dispatch(message, connection: connection, eventLoop: eventLoop, maxConcurrentCalls: weight, output: self) {
            [self] reply in
            self.complete(weight: weight, charge: charge, reply: reply)
        }
    }

    private func complete(weight: Int, charge: Int, reply: ByteBuffer?) {
        callsInFlight -= weight
        budget.release(charge)
        guard let context else { return }  // the connection is gone; the reply has nowhere to go
        if let reply {
            LengthPrefixedFrameEncoder.write(reply, framedTo: context, promise: nil)
            flushPending = true
            if !batchingFlushes { flushIfPending() }
        }
        drainWaitingFrames(context: context)
        closeIfQuiescedAndQuiet()
    }

    private func drainWaitingFrames(context: ChannelHandlerContext) {
        // Completions can happen synchronously inside `process`; the flag keeps this loop from recursing.
        guard !draining else { return }
        draining = true
        let wasBatching = batchingFlushes
        batchingFlushes = true
        while callsInFlight < maxCallsInFlight, context.channel.isWritable, let frame = waitingFrames.popFirst() {
            process(frame, eventLoop: context.eventLoop)
        }
        batchingFlushes = wasBatching
        draining = false
        if !batchingFlushes { flushIfPending() }
        if readHeld && hasRoom {
            readHeld = false
            context.read()
        }
    }

    private func flushIfPending() {
        guard flushPending, let context else { return }
        flushPending = false
        context.flush()
    }

    private func closeIfQuiescedAndQuiet() {
        guard quiescing, isQuiet, let context else { return }
        connection.logger.debug("Closing connection for shutdown")
        context.close(promise: nil)
    }
}

extension RPCConnectionHandler: RPCConnectionOutput, @unchecked Sendable {
    var isWritable: Bool { context?.channel.isWritable ?? false }

    func writeUnsolicited(_ payload: ByteBuffer) {
        guard let context else { return }
        LengthPrefixedFrameEncoder.write(payload, framedTo: context, promise: nil)
        flushPending = true
    }

    /// Inside a read burst or a drain the flush waits for its end, as replies' do.
    func flushUnsolicited() {
        if !batchingFlushes { flushIfPending() }
    }

    var subscriptions: RPCConnectionSubscriptions? {
        if let eventSubscriptions { return eventSubscriptions }
        guard let context else { return nil }
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

/// A queue of frames that allocates nothing until the first frame waits: most connections never queue, and
/// idle connections are counted in thousands.
private struct WaitingFrames {
    private var frames: CircularBuffer<ByteBuffer>?

    var isEmpty: Bool { frames?.isEmpty ?? true }

    mutating func append(_ frame: ByteBuffer) {
        if frames == nil { frames = CircularBuffer(initialCapacity: 4) }
        frames!.append(frame)
    }

    mutating func popFirst() -> ByteBuffer? {
        frames?.popFirst()
    }
}
