import NIOCore
import RPCCore
import RPCMetrics
import RPCWire

/// Cuts a connection's byte stream into frames (RPCWire's `LengthPrefixedFrameCutter`: a 4-byte big-endian
/// length, then the payload) and admits each on two conditions:
///
/// - **the peer's account** (`PeerLedger`): what the cutter holds of a frame still arriving is charged as it
///   arrives — the capacity of the buffer that holds it, never the length the peer announced, so a peer that
///   announces large frames and sends nothing holds nothing (the cutter allocates no frame whole here: its
///   buffer grows with what arrives). A whole frame is charged its length when it is handed on; the connection
///   handler gives that back once the frame's calls are answered. A charge the account refuses (the peer's
///   share, or what all peers may hold, is spent) gets `BufferBudgetExceeded` (answered -32009 and closed by
///   `ProtocolErrorHandler`).
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
///
/// In a connection's pipeline (`ConnectionPipeline`) the next handler is always the connection's
/// `RPCConnectionHandler`, and frames are handed to it by a call (`frameArrived`) rather than through the
/// pipeline: a pipeline hop wraps each frame in `NIOAny`, walks the contexts and unwraps it again, about 300
/// instructions a frame, 4 % of a `rpcd.ping` (bench/README.md, "Issue 39, third step: frames handed on by a
/// call"). Without one (the tests of this handler alone), frames go through the pipeline. Everything else (errors, read completion,
/// events) goes through the pipeline either way, and a frame is handed on at the same point in the sequence of
/// events as it would be fired.
final class FrameReceiver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// A state machine value whose methods call nothing outside it: no access to it can overlap another, so the
    /// run-time exclusivity check is left out (it is read on every frame).
    @exclusivity(unchecked) private var cutter: LengthPrefixedFrameCutter
    private let account: PeerAccount
    private let timeout: TimeAmount
    /// What the cutter's buffer holds of the account.
    private var charged = 0
    /// When the length of the frame still arriving was read, which `FrameTimeout=` counts from; nil while no
    /// frame with a known length is arriving.
    private var arrivingSince: NIODeadline?
    /// Set while frames are handed on; input that arrives meanwhile (a handler that feeds the channel from
    /// inside `channelRead`) is kept in `arrivedMeanwhile` and cut by the loop that is running.
    private var delivering = false
    private var arrivedMeanwhile: ByteBuffer?
    /// At most one timer per connection, checking `arrivingSince` when it fires: a pipelining client splits
    /// frames across reads all the time, and a timer scheduled and cancelled per frame would cost each call.
    private var timer: Scheduled<Void>?

    /// Where the bytes read are counted (the listener's `rpcd_received_bytes_total`); nil: not counted.
    private let received: RPCCounter?
    /// The next handler, which frames are handed to directly; nil: they are fired through the pipeline.
    private let connectionHandler: RPCConnectionHandler?

    init(
        maxFrameSize: Int, account: PeerAccount, timeout: Duration, received: RPCCounter? = nil,
        handingFramesTo connectionHandler: RPCConnectionHandler? = nil
    ) {
        self.received = received
        self.connectionHandler = connectionHandler
        self.cutter = LengthPrefixedFrameCutter(maxFrameSize: maxFrameSize, wholeAllocationLimit: 0)
        self.account = account
        self.timeout = TimeAmount(timeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !cutter.isStopped else { return }
        var input = unwrapInboundIn(data)
        received?.increment(by: input.readableBytes)
        if delivering {
            if arrivedMeanwhile == nil { arrivedMeanwhile = input } else { arrivedMeanwhile!.writeBuffer(&input) }
            return
        }
        delivering = true
        defer { delivering = false }
        var delivered = false
        while true {
            cutting: while true {
                switch cutter.next(from: &input) {
                case .frame(let frame):
                    guard account.charge(frame.readableBytes) else {
                        return refuse(BufferBudgetExceeded(account: account), context: context)
                    }
                    delivered = true
                    if let connectionHandler {
                        connectionHandler.frameArrived(frame)
                    } else {
                        context.fireChannelRead(wrapInboundOut(frame))
                    }
                case .needMoreData:
                    break cutting
                case .stopped:
                    return  // stopped while frames were handed on: the handler removed
                case .tooLarge(let error):
                    return refuse(error, context: context)
                case .admit:
                    preconditionFailure("a cutter without admission asks nothing")
                }
            }
            guard let more = arrivedMeanwhile else { break }
            arrivedMeanwhile = nil
            input = more
        }
        // A frame handed on in this read ended the one that was arriving, if any: one arriving now is new.
        if cutter.arrivingFrameSize != nil {
            if delivered || arrivingSince == nil { startDeadline(context: context) }
        } else {
            arrivingSince = nil
        }
        guard chargeHeld() else { return refuse(BufferBudgetExceeded(account: account), context: context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        stopTimer()
    }

    /// Brings the account's charge to what the cutter holds now; false when the account cannot cover it.
    private func chargeHeld() -> Bool {
        let holding = cutter.heldCapacity
        if holding > charged {
            guard account.charge(holding - charged) else { return false }
        } else if holding < charged {
            account.release(charged - holding)
        }
        charged = holding
        return true
    }

    /// A frame whose length was read is arriving: `FrameTimeout=` counts from now.
    private func startDeadline(context: ChannelHandlerContext) {
        let now = context.eventLoop.now
        arrivingSince = now
        if timer == nil { schedule(context: context, at: now + timeout) }
    }

    /// Nothing more is read into frames; what the cutter held is given back.
    private func stop() {
        cutter.stop()
        arrivingSince = nil
        arrivedMeanwhile = nil
        account.release(charged)
        charged = 0
    }

    private func refuse(_ error: any Error, context: ChannelHandlerContext) {
        stop()
        context.fireErrorCaught(error)
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard let since = arrivingSince else { return }
            if context.eventLoop.now - since >= timeout {
                refuse(FrameTimedOut(timeout: .nanoseconds(timeout.nanoseconds)), context: context)
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
