import NIOCore
import RPCClient
import RPCWire

/// One connection of a load run: keeps one call in flight per slot from the `LoadWindow` event on until the
/// window ends, records latencies of replies inside the window, then reports to `done`.
final class LoadConnectionHandler<Recorder: RPCLatencyRecorder>: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let frames: [ByteBuffer]
    private let done: EventLoopPromise<LoadConnectionStats<Recorder>>
    private var stats = LoadConnectionStats<Recorder>(recorder: Recorder())
    private var sentAt: [NIODeadline]
    private var inFlight = 0
    private var window: LoadWindow?
    private var stopping = false
    private var finished = false
    private var needsFlush = false
    private var drainTimer: Scheduled<Void>?

    init(frames: [ByteBuffer], done: EventLoopPromise<LoadConnectionStats<Recorder>>) {
        self.frames = frames
        self.done = done
        self.sentAt = Array(repeating: .uptimeNanoseconds(0), count: frames.count)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let window = event as? LoadWindow else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        self.window = window
        let now = context.eventLoop.now  // the loop's clock: a test's EmbeddedEventLoop moves it by hand
        for slot in frames.indices {
            sentAt[slot] = now
            context.write(wrapOutboundOut(frames[slot]), promise: nil)
        }
        inFlight = frames.count
        context.flush()
        let loop = context.eventLoop.assumeIsolated()
        loop.scheduleTask(deadline: window.measureEnd) { self.stopping = true }
        drainTimer = loop.scheduleTask(deadline: window.measureEnd + window.drainTimeout) {
            self.stats.unanswered = self.inFlight
            self.finish(context: context)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let now = context.eventLoop.now  // the loop's clock: a test's EmbeddedEventLoop moves it by hand
        guard let window, !finished else { return }
        guard let summary = frame.withUnsafeReadableBytes({ RPCReplySummary($0) }),
            let slot = summary.id, slot >= 0, slot < frames.count
        else {
            fail(context: context, "unexpected reply: \(RPCReply.abbreviated(bytes: Array(frame.readableBytesView)))")
            return
        }
        if summary.isError, stats.firstError == nil {
            stats.firstError = RPCReply.abbreviated(bytes: Array(frame.readableBytesView))
        }
        if now >= window.measureEnd { stopping = true }
        if now >= window.measureStart, !stopping {
            stats.calls += 1
            if summary.isError { stats.errors += 1 }
            let latency = now.uptimeNanoseconds &- sentAt[slot].uptimeNanoseconds
            stats.recorder.record(nanoseconds: latency)
        } else if now < window.measureStart {
            stats.warmupCalls += 1
        }
        if stopping {
            inFlight -= 1
            if inFlight == 0 { finish(context: context) }
        } else {
            sentAt[slot] = now
            context.write(wrapOutboundOut(frames[slot]), promise: nil)
            needsFlush = true
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(context: context, "\(error)")
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !finished {
            stats.failure = window == nil || !stopping ? "the server closed the connection" : nil
            stats.unanswered = inFlight
            finish(context: context)
        }
        context.fireChannelInactive()
    }

    private func fail(context: ChannelHandlerContext, _ reason: String) {
        guard !finished else { return }
        stats.failure = reason
        stats.unanswered = inFlight
        finish(context: context)
    }

    private func finish(context: ChannelHandlerContext) {
        guard !finished else { return }
        finished = true
        drainTimer?.cancel()
        done.succeed(stats)
        context.close(promise: nil)
    }
}
