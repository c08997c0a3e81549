import NIOCore
import Prometheus
import RPCCore
import RPCWire

/// What a connection has written and the socket not yet taken, charged to the peer's account until it is:
/// the replies and events of `RPCConnectionHandler`, framed (`LengthPrefixedFrameEncoder`) on the way out.
///
/// One promise per flush, not per frame: the last frame written since the flush is held back, and the flush
/// writes it with the promise that gives back what the whole flush was charged (NIO completes writes in
/// order, so when the last is written, so are the others). Event-loop confined, like its handler; a class,
/// because writing and flushing call back into the handler (a writability change drains events, which
/// write here again) and each call leaves its state settled before it passes anything on.
final class ChargedOutput {
    private let account: PeerAccount
    private var heldBack: ByteBuffer?
    private var charged = 0
    /// Something was written since the last flush.
    private(set) var flushPending = false

    /// Where the bytes written are counted (the listener's `rpcd_sent_bytes_total`); nil: not counted.
    private let sent: Counter?

    init(account: PeerAccount, sent: Counter? = nil) {
        self.account = account
        self.sent = sent
    }

    /// Writes one frame, charged until the socket has taken it; false (nothing written) when the account
    /// cannot cover it. `force` charges what was charged already under another name (a queued event on its
    /// way out) and cannot be refused.
    func write(_ payload: ByteBuffer, to context: ChannelHandlerContext, force: Bool) -> Bool {
        let bytes = LengthPrefixedFrameDecoder.headerSize + payload.readableBytes
        if force {
            account.forceCharge(bytes)
        } else if !account.charge(bytes) {
            return false
        }
        charged += bytes
        sent?.increment(by: Int64(bytes))
        let previous = heldBack
        heldBack = payload
        flushPending = true
        if let previous { LengthPrefixedFrameEncoder.write(previous, framedTo: context, promise: nil) }
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
            LengthPrefixedFrameEncoder.write(last, framedTo: context, promise: written)
            written.futureResult.whenComplete { [account] _ in account.release(charge) }
        }
        context.flush()
    }

    /// The connection is gone: what was held back is dropped (closing the account gave its charge back).
    func drop() {
        heldBack = nil
        charged = 0
        flushPending = false
    }
}
