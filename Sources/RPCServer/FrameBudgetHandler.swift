import NIOCore
import RPCWire

/// Charges every received frame to the server's `InboundByteBudget` (`MaxBufferedBytes=`): its length, which
/// the connection handler gives back once the frame's calls are answered.
///
/// A frame still arriving is charged its announced length as soon as that is read (the decoder's
/// `IncompleteFrameEvent`), before the bytes pile up; a frame that arrives whole is charged its length. When
/// the budget cannot cover a frame, the connection gets `BufferBudgetExceeded` (answered -32009 and closed
/// by `ProtocolErrorHandler`) and nothing more of it is passed on: many peers announcing large frames at
/// once exhaust the budget, not the daemon's memory. Event-loop confined.
final class FrameBudgetHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let budget: InboundByteBudget
    /// What the frame that is still arriving holds of the budget: its announced length.
    private var reservedForIncompleteFrame: Int?
    private var refused = false

    init(budget: InboundByteBudget) {
        self.budget = budget
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let incomplete = event as? IncompleteFrameEvent, !refused {
            if budget.reserve(incomplete.announcedLength) {
                reservedForIncompleteFrame = incomplete.announcedLength
            } else {
                refuse(context: context)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if reservedForIncompleteFrame != nil {
            reservedForIncompleteFrame = nil  // reserved when its length arrived: the same number of bytes
        } else {
            guard budget.reserve(unwrapInboundIn(data).readableBytes) else { return refuse(context: context) }
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let reserved = reservedForIncompleteFrame { budget.release(reserved) }
        reservedForIncompleteFrame = nil
    }

    private func refuse(context: ChannelHandlerContext) {
        refused = true
        context.fireErrorCaught(BufferBudgetExceeded(limit: budget.limit))
    }
}

/// Receiving a frame would pass `MaxBufferedBytes=`.
struct BufferBudgetExceeded: Error, CustomStringConvertible {
    var limit: Int
    var description: String { "the server holds \(limit) bytes of received frames (MaxBufferedBytes=)" }
}
