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

    private let timeout: Duration
    private var deadline: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = timeout
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IncompleteFrameEvent {
            deadline?.cancel()
            let timeout = self.timeout
            deadline = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                context.fireErrorCaught(FrameTimedOut(timeout: timeout))
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}

/// A frame did not arrive whole within `FrameTimeout=` of its length.
struct FrameTimedOut: Error, CustomStringConvertible {
    var timeout: Duration
    var description: String { "frame not complete \(timeout) after its length arrived (FrameTimeout=)" }
}
