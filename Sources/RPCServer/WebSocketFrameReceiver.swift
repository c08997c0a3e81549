import NIOCore
import NIOWebSocket
import RPCCore
import RPCWire

/// Cuts an upgraded connection's byte stream into WebSocket frames (RFC 6455 §5.2) for
/// `WebSocketMessageHandler`, as `FrameReceiver` cuts a framed connection's:
///
/// - **Unmasked in one copy of each read.** The channel holds the read, so its bytes are copied once into a
///   buffer of the receiver's own, and `WebSocketFrameScanner` unmasks every payload byte among them where it
///   lies, before any frame is cut out of them. Each whole frame is handed on as a `WebSocketReceivedFrame`:
///   what its header says that the next layer reads (FIN and the opcode), and its payload unmasked, a slice
///   of that buffer, so the header is read once, here. Not NIO's `WebSocketFrame`, which is allocated and
///   destroyed per frame. In `WebSocketPipeline` it is handed to the message handler by a call
///   (`frameArrived`), not through the pipeline, whose hop would box it in `NIOAny` and cast it out again
///   (with the message handler's own hop to the connection handler, about 900 instructions a frame:
///   bench/README.md, "Issue 39, third step: frames handed on by a call"); without a message handler (the
///   tests of this handler alone) it goes through the pipeline.
/// - **A client's frames are masked** (RFC 6455 §5.1): an unmasked one is refused by its header
///   (`WebSocketUnmaskedFrame`, which `WebSocketMessageHandler` answers with 1002).
/// - **Refused by its header.** A frame longer than `MaxFrameSize=`, a fragmented control frame or one longer
///   than 125 bytes is refused as soon as its length arrives (`WebSocketFrameHead`, the same refusals as NIO's
///   `WebSocketFrameDecoder`, as `NIOWebSocketError`s that `WebSocketMessageHandler` answers with their close
///   codes); nothing more is read after any refusal.
/// - **The frame still arriving is the peer's to pay for.** What is kept of it is charged to the peer's account
///   as it arrives (`ArrivingFrameBuffer`; `FrameReceiver` charges its cutter's buffer the same way): the buffer that holds it, which grows by
///   doubling with what arrives (never past the frame's size), never the length the frame announces. It is
///   given back once the frame is whole: from then on the message handler charges the message. A charge the
///   account refuses stops the input here and tells the message handler (`WebSocketInputRefused`), which
///   closes with 1008.
/// - **The deadline** (`FrameTimeout=`): a message must arrive whole, all its fragments, within `FrameTimeout=`
///   of its first byte; one that has not gets `FrameTimedOut`, which the message handler answers with 1008,
///   however often a trickle of bytes or of one-byte fragments resets the idle timer. A message that arrives
///   whole in one read never starts the clock.
///
/// Why not NIO's `WebSocketFrameDecoder` behind a `ByteToMessageHandler`, which rpcd used until the frames
/// were cut here: this handler followed every header already, to charge the frame still arriving and to
/// unmask, and the decoder's generic machinery read each header again (what that cost, and what cutting
/// frames here saved: bench/README.md, "Issue 23's fourth round"). NIOHTTP1 still parses the request,
/// NIOWebSocket answers the upgrade, and NIO's opcodes and close codes name what the frames carry.
/// Event-loop confined.
final class WebSocketFrameReceiver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = WebSocketReceivedFrame

    private enum State {
        /// Between frames, or holding the start of one whose header has not all arrived.
        case betweenFrames
        /// A frame whose header was read is arriving: its whole size, header and payload.
        case arriving(frameSize: Int)
        /// A frame was refused, or the handler removed: nothing more is read.
        case stopped
    }

    private let maxFrameSize: Int
    private let timeout: TimeAmount
    private var scanner = WebSocketFrameScanner()
    private var state = State.betweenFrames
    /// Bytes after the last whole frame, unmasked: the start of the next one, charged to the peer.
    private var arriving: ArrivingFrameBuffer
    /// Data frames of a fragmented message have arrived, and not its last one (FIN).
    private var messageOpen = false
    /// When the message now arriving (a frame still arriving, or a fragmented message) began to arrive; nil
    /// when none is.
    private var arrivingSince: NIODeadline?
    /// At most one timer per connection, checking `arrivingSince` when it fires, as `FrameReceiver`'s.
    private var timer: Scheduled<Void>?
    /// Set while frames are handed on; input that arrives meanwhile (a handler that feeds the channel from
    /// inside `channelRead`) is kept in `arriving` and cut by the loop that is running.
    private var delivering = false

    /// The next handler, which frames are handed to directly; nil: they are fired through the pipeline.
    private let messageHandler: WebSocketMessageHandler?

    /// `maxFrameSize`: the longest frame taken (`MaxFrameSize=`, and at least the 125 bytes a control frame
    /// may carry whatever it says, RFC 6455 §5.5); `timeout`: `FrameTimeout=`.
    init(maxFrameSize: Int, account: PeerAccount, timeout: Duration, handingFramesTo messageHandler: WebSocketMessageHandler? = nil) {
        self.messageHandler = messageHandler
        self.maxFrameSize = max(maxFrameSize, 125)
        self.timeout = TimeAmount(timeout)
        self.arriving = ArrivingFrameBuffer(account: account)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isStopped else { return }
        let read = unwrapInboundIn(data)
        var input: ByteBuffer
        let unmaskFrom: Int
        if var buffered = arriving.take() {
            unmaskFrom = buffered.readableBytes
            ArrivingFrameBuffer.append(read, to: &buffered, frameSize: frameSize, allocator: context.channel.allocator)
            input = buffered
        } else {
            unmaskFrom = 0
            input = context.channel.allocator.buffer(capacity: read.readableBytes)
            input.writeImmutableBuffer(read)
        }
        var scanner = self.scanner
        input.withUnsafeMutableReadableBytes { scanner.scan(unmaskingIn: UnsafeMutableRawBufferPointer(rebasing: $0[unmaskFrom...])) }
        self.scanner = scanner
        if delivering {
            arriving.keep(input, copying: false, frameSize: frameSize, allocator: context.channel.allocator)
            return
        }
        delivering = true
        defer { delivering = false }
        var ownsInput = true
        while true {
            // Frames handed on are slices of `input`: from then on its storage is shared.
            if deliverFrames(from: &input, context: context) { ownsInput = false }
            guard !isStopped else { return }
            guard var arrived = arriving.take() else { break }  // bytes that came in (unmasked) while frames were handed on
            input.writeBuffer(&arrived)
            ownsInput = false
        }
        if input.readableBytes > 0 {
            arriving.keep(input, copying: !ownsInput, frameSize: frameSize, allocator: context.channel.allocator)
        }
        guard arriving.charge() else {
            stop()
            context.fireUserInboundEventTriggered(WebSocketInputRefused())
            return
        }
        if messageOpen || input.readableBytes > 0 {
            startDeadline(context: context)
        } else {
            arrivingSince = nil
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    private var isStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    /// The whole size of the frame still arriving; 0 while its header has not all arrived.
    private var frameSize: Int {
        if case .arriving(let frameSize) = state { return frameSize }
        return 0
    }

    /// Hands on every whole frame at the start of `input`, and notes the incomplete one that may follow.
    /// Returns whether any frame was handed on.
    private func deliverFrames(from input: inout ByteBuffer, context: ChannelHandlerContext) -> Bool {
        var delivered = false
        while !isStopped {
            let cut: WebSocketFrameHead.Cut
            do {
                cut = try WebSocketFrameHead.cut(from: &input, maxFrameSize: maxFrameSize)
            } catch {
                refuse(Self.nioError(error), context: context)
                return delivered
            }
            switch cut {
            case .needHeader:
                state = .betweenFrames
                return delivered
            case .incomplete(let head) where head.maskKey == nil, .frame(let head, _) where head.maskKey == nil:
                refuse(WebSocketUnmaskedFrame(), context: context)
                return delivered
            case .incomplete(let head):
                state = .arriving(frameSize: head.frameSize)
                return delivered
            case .frame(let head, let frame):
                state = .betweenFrames
                if !head.isControl { messageOpen = !head.fin }
                delivered = true
                let received = WebSocketReceivedFrame(head: head, frame: frame)
                if let messageHandler {
                    messageHandler.frameArrived(received)
                } else {
                    context.fireChannelRead(wrapInboundOut(received))
                }
            }
        }
        return delivered
    }

    /// The error NIO's decoder raises for the same frame, which `WebSocketMessageHandler` answers.
    private static func nioError(_ error: WebSocketFrameError) -> NIOWebSocketError {
        switch error {
        case .tooLong: .invalidFrameLength
        case .fragmentedControlFrame: .fragmentedControlFrame
        case .controlFrameTooLong: .multiByteControlFrameLength
        }
    }

    private func refuse(_ error: any Error, context: ChannelHandlerContext) {
        stop()
        context.fireErrorCaught(error)
    }

    private func stop() {
        state = .stopped
        arriving.release()
        stopTimer()
    }

    private func startDeadline(context: ChannelHandlerContext) {
        guard arrivingSince == nil else { return }
        let now = context.eventLoop.now
        arrivingSince = now
        if timer == nil { schedule(context: context, at: now + timeout) }
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard !isStopped, let since = arrivingSince else { return }
            if context.eventLoop.now - since >= timeout {
                refuse(FrameTimedOut(timeout: .nanoseconds(timeout.nanoseconds)), context: context)
            } else {
                schedule(context: context, at: since + timeout)  // a later message, still within its time
            }
        }
    }

    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }
}

/// One whole frame as `WebSocketFrameReceiver` hands it on, from the header it read (`WebSocketFrameHead`):
/// FIN and the opcode, and the payload, unmasked. The payload comes first and one byte beside it, 24 bytes,
/// so that `NIOAny` holds it without a box.
struct WebSocketReceivedFrame {
    /// The payload, unmasked: a slice of the receiver's buffer.
    var payload: ByteBuffer
    /// FIN, RSV1-3 and the opcode, as they came (`WebSocketFrameHead.firstByte`).
    var firstByte: UInt8

    var fin: Bool { firstByte & 0x80 != 0 }
    /// The opcode's 4 bits (RFC 6455 §5.2).
    var opcode: UInt8 { firstByte & 0x0F }

    /// The frame `frame`, whose header `head` was read from it.
    init(head: WebSocketFrameHead, frame: ByteBuffer) {
        self.payload = head.payload(of: frame)
        self.firstByte = head.firstByte
    }
}

/// `WebSocketFrameReceiver` could not charge the frame arriving: the peer's share is spent.
struct WebSocketInputRefused: Sendable {}

/// A client's frame that is not masked (RFC 6455 §5.1: a server must close the connection).
struct WebSocketUnmaskedFrame: Error, CustomStringConvertible {
    var description: String { "a client's WebSocket frames are masked (RFC 6455 §5.1)" }
}
