import NIOCore
import RPCWire

/// Cuts a connection's byte stream into frames (`LengthPrefixedFrameDecoder.scan`: a 4-byte big-endian length,
/// then the payload) and admits each on two conditions that both start when its length is read:
///
/// - **the budget** (`MaxBufferedBytes=`, the server's `InboundByteBudget`): a frame still arriving is charged
///   its announced length at once, before its bytes pile up; a frame that arrives whole is charged its length.
///   The connection handler gives it back once the frame's calls are answered. A frame the budget cannot cover
///   gets `BufferBudgetExceeded` (answered -32009 and closed by `ProtocolErrorHandler`): many peers announcing
///   large frames at once exhaust the budget, not the daemon's memory.
/// - **the deadline** (`FrameTimeout=`): a frame that has not arrived whole that long after its length gets
///   `FrameTimedOut` (answered -32010 and closed), however often a trickle of bytes resets the idle timer.
///
/// A length above `MaxFrameSize=` gets `FrameTooLargeError` as soon as its four bytes arrive. After any of the
/// three, nothing more of the connection is read into frames.
///
/// Why not `ByteToMessageHandler(LengthPrefixedFrameDecoder)` and a handler for admission behind it, as
/// clients use: every handler costs each connection a handler and a context (idle connections are counted in
/// thousands), and each frame a pipeline hop; the generic decoder machinery cost more per frame than the
/// decoding (bench/README.md). Frames are delivered as slices of what was read, in order, as soon as they are
/// whole; at EOF an incomplete tail has nobody to answer and is dropped. Event-loop confined.
final class FrameReceiver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let maxFrameSize: Int
    private let budget: InboundByteBudget
    private let timeout: TimeAmount
    /// Bytes after the last whole frame: the start of the next one. A buffer of our own, so that the channel
    /// can reuse its receive buffer, and sized for the whole frame, so that each read is appended in place.
    private var partial: ByteBuffer?
    /// What the frame that is still arriving holds of the budget: its announced length.
    private var reservedForIncompleteFrame: Int?
    /// A frame was refused, or the handler removed: nothing more is read into frames.
    private var stopped = false
    /// Set while frames are handed on; input that arrives meanwhile (a handler that feeds the channel from
    /// inside `channelRead`) is appended to `partial` and read by the loop that is running.
    private var delivering = false
    /// When the length of the frame still arriving was read; nil when no frame is incomplete.
    private var incompleteSince: NIODeadline?
    /// At most one timer per connection, checking `incompleteSince` when it fires: a pipelining client splits
    /// frames across reads all the time, and a timer scheduled and cancelled per frame would cost each call.
    private var timer: Scheduled<Void>?

    init(maxFrameSize: Int, budget: InboundByteBudget, timeout: Duration) {
        precondition(maxFrameSize >= 0 && maxFrameSize <= Int(UInt32.max), "maxFrameSize must fit the u32 length field")
        self.maxFrameSize = maxFrameSize
        self.budget = budget
        self.timeout = TimeAmount(timeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !stopped else { return }
        var input = unwrapInboundIn(data)
        // Whether `input` is our own buffer, shared with nothing: then the part of a frame it holds can stay
        // where it is, and the next read is appended to it in place.
        var ownsInput = false
        if var buffered = partial {
            partial = nil  // so that the append below finds the buffer unshared, and grows it in place
            buffered.writeBuffer(&input)
            input = buffered
            ownsInput = true
        }
        if delivering {
            partial = input
            return
        }
        delivering = true
        defer { delivering = false }
        while true {
            // Frames handed on are slices of `input`: from then on its storage is shared.
            if deliverFrames(from: &input, context: context) { ownsInput = false }
            guard !stopped else { return }
            guard var arrived = partial else { break }  // bytes that came in while frames were handed on
            partial = nil
            input.writeBuffer(&arrived)
            ownsInput = false
        }
        guard input.readableBytes > 0 else { return }
        let frameSize = reservedForIncompleteFrame.map { LengthPrefixedFrameDecoder.headerSize + $0 } ?? 0
        if ownsInput && input.capacity - input.readerIndex >= frameSize {
            partial = input
        } else {
            keep(input, frameSize: frameSize, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopped = true
        partial = nil
        stopTimer()
        if let reserved = reservedForIncompleteFrame { budget.release(reserved) }
        reservedForIncompleteFrame = nil
    }

    /// Hands on every whole frame at the start of `input`, and admits the incomplete one that may follow.
    /// Returns whether any frame was handed on.
    private func deliverFrames(from input: inout ByteBuffer, context: ChannelHandlerContext) -> Bool {
        var delivered = false
        while !stopped {
            let scan: LengthPrefixedFrameDecoder.Scan
            do {
                scan = try LengthPrefixedFrameDecoder.scan(input, maxFrameSize: maxFrameSize)
            } catch {
                refuse(error, context: context)
                return delivered
            }
            switch scan {
            case .needLength:
                return delivered
            case .incomplete(let announcedLength):
                if reservedForIncompleteFrame == nil { admitIncomplete(announcedLength, context: context) }
                return delivered
            case .frame(let length):
                incompleteSince = nil
                if reservedForIncompleteFrame != nil {
                    reservedForIncompleteFrame = nil  // reserved when its length arrived: the same number of bytes
                } else if !budget.reserve(length) {
                    refuse(BufferBudgetExceeded(limit: budget.limit), context: context)
                    return delivered
                }
                let frame = LengthPrefixedFrameDecoder.readFrame(from: &input)!
                delivered = true
                context.fireChannelRead(wrapInboundOut(frame))
            }
        }
        return delivered
    }

    private func admitIncomplete(_ announcedLength: Int, context: ChannelHandlerContext) {
        guard budget.reserve(announcedLength) else {
            return refuse(BufferBudgetExceeded(limit: budget.limit), context: context)
        }
        reservedForIncompleteFrame = announcedLength
        let now = context.eventLoop.now
        incompleteSince = now
        if timer == nil { schedule(context: context, at: now + timeout) }
    }

    /// Keeps the start of the next frame in a buffer of its own, sized for the whole frame once its length is
    /// known, so that the rest is appended without a copy each time the buffer would have doubled. That size
    /// is what the frame is charged to `MaxBufferedBytes=` from its length on, so the budget bounds it; and
    /// memory the peer never sends is never written.
    private func keep(_ tail: ByteBuffer, frameSize: Int, context: ChannelHandlerContext) {
        var tail = tail
        let capacity = max(tail.readableBytes, frameSize)
        var own = context.channel.allocator.buffer(capacity: capacity)
        own.writeBuffer(&tail)
        partial = own
    }

    private func refuse(_ error: any Error, context: ChannelHandlerContext) {
        stopped = true
        partial = nil
        context.fireErrorCaught(error)
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard let since = incompleteSince, !stopped else { return }
            if context.eventLoop.now - since >= timeout {
                stopped = true
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
