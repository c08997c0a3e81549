import NIOCore
import RPCWire

/// Gives every frame a deadline (`FrameTimeout=`) from the moment its length has arrived: a peer that
/// announces a frame and then trickles it, a byte now and then, is closed when the deadline passes (with
/// `FrameTimedOut`, answered -32010 by `ProtocolErrorHandler`), however often its bytes reset the idle timer.
///
/// Only frames that do not arrive whole in one read have a deadline (the decoder's `IncompleteFrameEvent`);
/// it ends when the frame is delivered. Event-loop confined.
final class FrameDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    /// When the length of the frame still arriving was read; nil when no frame is incomplete.
    private var incompleteSince: NIODeadline?
    /// At most one timer per connection, checking `incompleteSince` when it fires: a pipelining client splits
    /// frames across reads all the time, and a timer scheduled and cancelled per frame would cost each call.
    private var timer: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = TimeAmount(timeout)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IncompleteFrameEvent {
            let now = context.eventLoop.now
            incompleteSince = now
            if timer == nil { schedule(context: context, at: now + timeout) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        incompleteSince = nil
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
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

    private func stop() {
        timer?.cancel()
        timer = nil
    }
}

/// A frame did not arrive whole within `FrameTimeout=` of its length.
struct FrameTimedOut: Error, CustomStringConvertible {
    var timeout: Duration
    var description: String { "frame not complete \(timeout) after its length arrived (FrameTimeout=)" }
}
