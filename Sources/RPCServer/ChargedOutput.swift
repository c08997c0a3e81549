import NIOCore
import RPCCore
import RPCWire

/// How `ChargedOutput` puts a connection's replies and events on the wire.
enum OutputFraming: Sendable {
    /// rpcd's length-prefixed frames, framed here (`LengthPrefixedFrameEncoder`): no handler between.
    case lengthPrefixed
    /// One payload per message, passed on to the handler before `RPCConnectionHandler` that frames it (an HTTP
    /// response, a WebSocket text message). A message with nothing to answer (notifications only) is passed
    /// on as an empty payload: an HTTP request needs its answer (204) even then; WebSocket drops it.
    case messages

    /// What one payload costs besides its bytes while it waits: the frame header, or a message's share of
    /// the response head or frame header its handler adds.
    var overhead: Int {
        switch self {
        case .lengthPrefixed: LengthPrefixedFrameDecoder.headerSize
        case .messages: 64
        }
    }
}

/// What a connection has written and the socket not yet taken, charged to the peer's account until it is:
/// the replies and events of `RPCConnectionHandler`, framed (`OutputFraming`) on the way out.
///
/// One promise per flush, not per frame: the last frame written since the flush is held back, and the flush
/// writes it with the promise that gives back what the whole flush was charged (NIO completes writes in
/// order, so when the last is written, so are the others). Event-loop confined, like its handler; a class,
/// because writing and flushing call back into the handler (a writability change drains events, which
/// write here again) and each call leaves its state settled before it passes anything on.
final class ChargedOutput {
    private let account: PeerAccount
    let framing: OutputFraming
    private var heldBack: ByteBuffer?
    private var charged = 0
    /// Something was written since the last flush.
    private(set) var flushPending = false

    init(account: PeerAccount, framing: OutputFraming) {
        self.account = account
        self.framing = framing
    }

    /// Writes one frame, charged until the socket has taken it; false (nothing written) when the account
    /// cannot cover it. `force` charges what was charged already under another name (a queued event on its
    /// way out) and cannot be refused.
    func write(_ payload: ByteBuffer, to context: ChannelHandlerContext, force: Bool) -> Bool {
        let bytes = framing.overhead + payload.readableBytes
        if force {
            account.forceCharge(bytes)
        } else if !account.charge(bytes) {
            return false
        }
        charged += bytes
        let previous = heldBack
        heldBack = payload
        flushPending = true
        if let previous { emit(previous, to: context, promise: nil) }
        return true
    }

    /// Sends what was written; the account gets it back once the socket has taken it.
    func flush(_ context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        if let last = heldBack {
            heldBack = nil
            let charge = charged
            charged = 0
            let written = context.eventLoop.makePromise(of: Void.self)
            emit(last, to: context, promise: written)
            written.futureResult.whenComplete { [account] _ in account.release(charge) }
        }
        context.flush()
    }

    private func emit(_ payload: ByteBuffer, to context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        switch framing {
        case .lengthPrefixed: LengthPrefixedFrameEncoder.write(payload, framedTo: context, promise: promise)
        case .messages: context.write(NIOAny(payload), promise: promise)
        }
    }

    /// The connection is gone: what was held back is dropped (closing the account gave its charge back).
    func drop() {
        heldBack = nil
        charged = 0
        flushPending = false
    }
}
