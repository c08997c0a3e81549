import NIOCore
import RPCCore
import RPCMetrics
import RPCWire

/// Cuts a connection's byte stream into frames (`LengthPrefixedFrameDecoder.scan`: a 4-byte big-endian length,
/// then the payload) and admits each on two conditions:
///
/// - **the peer's account** (`PeerLedger`): what this handler keeps of a frame still arriving is charged as it
///   arrives — the capacity of the buffer that holds it, never the length the peer announced, so a peer that
///   announces large frames and sends nothing holds nothing. A whole frame is charged its length when it is
///   handed on; the connection handler gives that back once the frame's calls are answered. A charge the
///   account refuses (the peer's share, or what all peers may hold, is spent) gets `BufferBudgetExceeded`
///   (answered -32009 and closed by `ProtocolErrorHandler`).
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
    private let account: PeerAccount
    private let timeout: TimeAmount
    /// Bytes after the last whole frame: the start of the next one, charged to the peer.
    private var arriving: ArrivingFrameBuffer
    private var state = State.betweenFrames
    /// Set while frames are handed on; input that arrives meanwhile (a handler that feeds the channel from
    /// inside `channelRead`) is kept in `arriving` and read by the loop that is running.
    private var delivering = false
    /// At most one timer per connection, checking the arriving frame's `since` when it fires: a pipelining client splits
    /// frames across reads all the time, and a timer scheduled and cancelled per frame would cost each call.
    private var timer: Scheduled<Void>?

    private enum State {
        /// Between frames, or holding the first bytes of one whose length has not all arrived yet.
        case betweenFrames
        /// A frame whose length was read is arriving: its whole size (header included), and when its length
        /// was read, which `FrameTimeout=` counts from.
        case arriving(frameSize: Int, since: NIODeadline)
        /// A frame was refused, or the handler removed: nothing more is read into frames.
        case stopped
    }

    /// Where the bytes read are counted (the listener's `rpcd_received_bytes_total`); nil: not counted.
    private let received: RPCCounter?

    init(maxFrameSize: Int, account: PeerAccount, timeout: Duration, received: RPCCounter? = nil) {
        self.received = received
        precondition(maxFrameSize >= 0 && maxFrameSize <= Int(UInt32.max), "maxFrameSize must fit the u32 length field")
        self.maxFrameSize = maxFrameSize
        self.account = account
        self.arriving = ArrivingFrameBuffer(account: account)
        self.timeout = TimeAmount(timeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isStopped else { return }
        var input = unwrapInboundIn(data)
        received?.increment(by: input.readableBytes)
        // Whether `input` is our own buffer, shared with nothing: then the part of a frame it holds can stay
        // where it is, and the next read is appended to it in place.
        var ownsInput = false
        if var buffered = arriving.take() {
            ArrivingFrameBuffer.append(input, to: &buffered, frameSize: frameSize, allocator: context.channel.allocator)
            input = buffered
            ownsInput = true
        }
        if delivering {
            arriving.keep(input, copying: false, frameSize: frameSize, allocator: context.channel.allocator)
            return
        }
        delivering = true
        defer { delivering = false }
        while true {
            // Frames handed on are slices of `input`: from then on its storage is shared.
            if deliverFrames(from: &input, context: context) { ownsInput = false }
            guard !isStopped else { return }
            guard var arrived = arriving.take() else { break }  // bytes that came in while frames were handed on
            input.writeBuffer(&arrived)
            ownsInput = false
        }
        if input.readableBytes > 0 {
            arriving.keep(input, copying: !ownsInput, frameSize: frameSize, allocator: context.channel.allocator)
        }
        guard arriving.charge() else { return refuse(BufferBudgetExceeded(account: account), context: context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        state = .stopped
        arriving.release()
        stopTimer()
    }

    private var isStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    /// The whole size of the frame still arriving, header included; 0 while its length is not known.
    private var frameSize: Int {
        if case .arriving(let frameSize, _) = state { return frameSize }
        return 0
    }

    /// Hands on every whole frame at the start of `input`, and notes the incomplete one that may follow.
    /// Returns whether any frame was handed on.
    private func deliverFrames(from input: inout ByteBuffer, context: ChannelHandlerContext) -> Bool {
        var delivered = false
        while !isStopped {
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
                if case .betweenFrames = state { startDeadline(announcedLength, context: context) }
                return delivered
            case .frame(let length):
                state = .betweenFrames
                guard account.charge(length) else {
                    refuse(BufferBudgetExceeded(account: account), context: context)
                    return delivered
                }
                let frame = LengthPrefixedFrameDecoder.readFrame(from: &input)!
                delivered = true
                context.fireChannelRead(wrapInboundOut(frame))
            }
        }
        return delivered
    }

    private func startDeadline(_ announcedLength: Int, context: ChannelHandlerContext) {
        let now = context.eventLoop.now
        state = .arriving(frameSize: LengthPrefixedFrameDecoder.headerSize + announcedLength, since: now)
        if timer == nil { schedule(context: context, at: now + timeout) }
    }

    private func refuse(_ error: any Error, context: ChannelHandlerContext) {
        state = .stopped
        arriving.release()
        context.fireErrorCaught(error)
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard case .arriving(_, let since) = state else { return }
            if context.eventLoop.now - since >= timeout {
                state = .stopped
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

/// What a peer sent would pass what its account may hold: its share (`MaxBufferedBytesPerPeer=`) or what all
/// peers may hold (`MaxBufferedBytes=`).
struct BufferBudgetExceeded: Error, CustomStringConvertible {
    var limit: Int
    var description: String {
        "the peer's share of buffered bytes (\(limit), MaxBufferedBytesPerPeer=) or what all peers may hold (MaxBufferedBytes=) is spent"
    }

    init(account: PeerAccount) {
        limit = account.shareLimit
    }
}

/// A frame did not arrive whole within `FrameTimeout=` of its length.
struct FrameTimedOut: Error, CustomStringConvertible {
    var timeout: Duration
    var description: String { "frame not complete \(timeout) after its length arrived (FrameTimeout=)" }
}
