import NIOCore
import RPCWire

/// Admits each received frame on two conditions that both start when its length is read:
///
/// - **the budget** (`MaxBufferedBytes=`, the server's `InboundByteBudget`): a frame still arriving is charged
///   its announced length at once (the decoder's `IncompleteFrameEvent`), before its bytes pile up; a frame
///   that arrives whole is charged its length. The connection handler gives it back once the frame's calls are
///   answered. A frame the budget cannot cover gets `BufferBudgetExceeded` (answered -32009 and closed by
///   `ProtocolErrorHandler`), and nothing more of the connection is passed on: many peers announcing large
///   frames at once exhaust the budget, not the daemon's memory.
/// - **the deadline** (`FrameTimeout=`): a frame that has not arrived whole that long after its length gets
///   `FrameTimedOut` (answered -32010 and closed), however often a trickle of bytes resets the idle timer.
///
/// One handler for both, as both are about letting a frame in: each handler costs every connection a handler
/// and a context, and idle connections are counted in thousands. Event-loop confined.
final class FrameAdmissionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let budget: InboundByteBudget
    private let timeout: TimeAmount
    /// What the frame that is still arriving holds of the budget: its announced length.
    private var reservedForIncompleteFrame: Int?
    private var refused = false
    /// When the length of the frame still arriving was read; nil when no frame is incomplete.
    private var incompleteSince: NIODeadline?
    /// At most one timer per connection, checking `incompleteSince` when it fires: a pipelining client splits
    /// frames across reads all the time, and a timer scheduled and cancelled per frame would cost each call.
    private var timer: Scheduled<Void>?

    init(budget: InboundByteBudget, timeout: Duration) {
        self.budget = budget
        self.timeout = TimeAmount(timeout)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let incomplete = event as? IncompleteFrameEvent, !refused {
            if budget.reserve(incomplete.announcedLength) {
                reservedForIncompleteFrame = incomplete.announcedLength
                let now = context.eventLoop.now
                incompleteSince = now
                if timer == nil { schedule(context: context, at: now + timeout) }
            } else {
                refuse(context: context)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        incompleteSince = nil
        guard !refused else { return }
        if reservedForIncompleteFrame != nil {
            reservedForIncompleteFrame = nil  // reserved when its length arrived: the same number of bytes
        } else {
            guard budget.reserve(unwrapInboundIn(data).readableBytes) else { return refuse(context: context) }
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimer()
        if let reserved = reservedForIncompleteFrame { budget.release(reserved) }
        reservedForIncompleteFrame = nil
    }

    private func refuse(context: ChannelHandlerContext) {
        refused = true
        context.fireErrorCaught(BufferBudgetExceeded(limit: budget.limit))
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard let since = incompleteSince else { return }
            if context.eventLoop.now - since >= timeout {
                context.fireErrorCaught(FrameTimedOut(timeout: .nanoseconds(timeout.nanoseconds)))
            } else {
                schedule(context: context, at: since + timeout)  // a later frame, still within its time
            }
        }
    }

    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }
}

/// Receiving a frame would pass `MaxBufferedBytes=`.
struct BufferBudgetExceeded: Error, CustomStringConvertible {
    var limit: Int
    var description: String { "the server holds \(limit) bytes of received frames (MaxBufferedBytes=)" }
}

/// A frame did not arrive whole within `FrameTimeout=` of its length.
struct FrameTimedOut: Error, CustomStringConvertible {
    var timeout: Duration
    var description: String { "frame not complete \(timeout) after its length arrived (FrameTimeout=)" }
}
