import JSONRPC
import NIOCore
import RPCCore
import RPCMetrics
import RPCWire

/// How `ChargedOutput` puts a connection's replies and events on the wire.
enum OutputFraming: Sendable {
    /// rpcd's length-prefixed frames, framed and coalesced here (below): no handler between.
    case lengthPrefixed
    /// WebSocket text frames (`WebSocketFrameHeader`), framed and coalesced here as length-prefixed frames
    /// are: a reply is serialized straight into the output buffer behind its frame header. A message with
    /// nothing to answer (notifications only) writes nothing. The handler before `RPCConnectionHandler`
    /// (`WebSocketMessageHandler`) passes the bytes on and adds its control frames.
    case webSocket
    /// One payload per message, passed on to the handler before `RPCConnectionHandler` that frames it (an HTTP
    /// response). The last message before a flush is held back and handed on with the one promise that gives
    /// back what the flush was charged (NIO completes writes in order, so when it is written, so are the
    /// others), as the frames' buffer is. A message with nothing to answer (notifications only) is passed on
    /// as an empty payload: an HTTP request needs its answer (204) even then.
    case messages

    /// What a payload of `length` bytes costs while it waits: with its frame header, or with a message's share
    /// of the response head its handler adds.
    func size(payloadLength length: Int) -> Int {
        switch self {
        case .lengthPrefixed: LengthPrefixedFrameDecoder.headerSize + length
        case .webSocket: WebSocketFrameHeader.size(payloadLength: length) + length
        case .messages: 64 + length
        }
    }

    /// Appends the header of a frame of `length` bytes of payload (`.lengthPrefixed`, `.webSocket`).
    fileprivate func writeHeader(payloadLength length: Int, into buffer: inout ByteBuffer) {
        switch self {
        case .lengthPrefixed: buffer.writeInteger(UInt32(length), endianness: .big)
        case .webSocket: buffer.writeWebSocketFrameHeader(.text, payloadLength: length)
        case .messages: preconditionFailure("messages are framed by the handler before RPCConnectionHandler")
        }
    }

    /// Stores the header of a frame of `length` bytes of payload at the start of `memory`, which has room for
    /// it; returns its size.
    fileprivate func storeHeader(payloadLength length: Int, into memory: UnsafeMutableRawBufferPointer) -> Int {
        switch self {
        case .lengthPrefixed:
            memory.storeBytes(of: UInt32(length).bigEndian, as: UInt32.self)
            return LengthPrefixedFrameDecoder.headerSize
        case .webSocket:
            return WebSocketFrameHeader.store(.text, payloadLength: length, into: memory)
        case .messages:
            preconditionFailure("messages are framed by the handler before RPCConnectionHandler")
        }
    }
}

/// What a connection has written and the socket not yet taken, charged to the peer's account until it is:
/// the replies and events of `RPCConnectionHandler`, framed (`OutputFraming`) on the way out.
///
/// One output buffer per connection, as redis keeps one per client: every small frame written between two
/// flushes (a read burst's replies) is appended to it behind its header (a length, or a WebSocket frame
/// header), and the flush hands the buffer to the channel as one write, with one promise that gives back what
/// the buffer was charged. A reply whose length is known before it is written (every result) is serialized
/// straight into the buffer behind its header, without a buffer of its own. The buffer exists only between a
/// write and its flush, so an idle connection holds none. A frame larger than `coalescingLimit` is not
/// copied: the buffer so far goes out first (order is kept), then the frame's header and payload (a result:
/// the header with the reply's head, the result as it is, the reply's tail), with a promise of their own.
///
/// ```
/// write(a) write(b) write(c)           flush
///   output: [hdr a|a|hdr b|b|hdr c|c] ──────► one context.write + one promise (charge of a+b+c) + flush
/// ```
///
/// Every byte is charged from `write` until NIO reports the write done (taken by the socket, or failed
/// because the connection is gone). Event-loop confined, like its handler; a class, because writing and
/// flushing call back into the handler (a writability change drains events, which write here again) and each
/// call leaves its state settled before it passes anything on.
final class ChargedOutput {
    private let account: PeerAccount
    let framing: OutputFraming
    /// Frames written since the last flush, not yet handed to the channel.
    private var pending: ByteBuffer?
    /// What `pending` is charged to the account.
    private var pendingCharge = 0
    /// `.messages`: the last message written since the flush, handed on by it with the promise.
    private var heldBackMessage: ByteBuffer?
    /// How large the last flushed buffer grew: the next one starts that large (at most
    /// `maximumStartCapacity`), so that a steady pipeline allocates once per burst and never regrows, while the
    /// room a buffer holds beyond its charged frames stays small.
    private var lastSize = ChargedOutput.minimumCapacity
    /// Something was handed to the channel, or is pending, since the last flush.
    private(set) var flushPending = false

    /// Where the bytes written are counted (the listener's `rpcd_sent_bytes_total`); nil: not counted.
    private let sent: RPCCounter?
    /// Bytes written since the last flush, added to `sent` by the flush: one atomic add per burst.
    private var uncounted = 0

    private static let minimumCapacity = 256
    private static let maximumStartCapacity = 4096

    init(account: PeerAccount, framing: OutputFraming = .lengthPrefixed, sent: RPCCounter? = nil) {
        self.account = account
        self.framing = framing
        self.sent = sent
    }

    /// Writes one frame, charged until the socket has taken it; false (nothing written) when the account
    /// cannot cover it. `force` charges what was charged already under another name (a queued event on its
    /// way out) and cannot be refused. `holding` is what the account holds already for what this frame
    /// answers (its request's frame): it becomes part of the frame's charge, and whatever is left of it is
    /// given back, written or not.
    func write(_ payload: ByteBuffer, to context: ChannelHandlerContext, force: Bool, holding: Int = 0) -> Bool {
        let bytes = framing.size(payloadLength: payload.readableBytes)
        if force {
            account.forceCharge(bytes)
            if holding > 0 { account.release(holding) }
        } else if !charge(bytes, holding: holding) {
            return false
        }
        flushPending = true
        uncounted += bytes
        if framing == .messages {
            if let previous = heldBackMessage { context.write(NIOAny(previous), promise: nil) }
            heldBackMessage = payload
            pendingCharge += bytes
        } else if payload.readableBytes <= Self.coalescingLimit {
            var buffer = takePending(context, room: bytes)
            framing.writeHeader(payloadLength: payload.readableBytes, into: &buffer)
            buffer.writeImmutableBuffer(payload)
            pending = buffer
            pendingCharge += bytes
        } else {
            handOverPending(context)
            var header = context.channel.allocator.buffer(capacity: bytes - payload.readableBytes)
            framing.writeHeader(payloadLength: payload.readableBytes, into: &header)
            context.write(NIOAny(header), promise: nil)
            let written = context.eventLoop.makePromise(of: Void.self)
            context.write(NIOAny(payload), promise: written)
            written.futureResult.whenComplete { [account] _ in account.release(bytes) }
        }
        return true
    }

    /// Writes one reply as `write(_:to:force:)` does; a small result (every reply of a call answered at once,
    /// `rpcd.ping`'s among them) is serialized straight into the output buffer behind its header, without a
    /// buffer of its own.
    func write(_ reply: RPCReply, to context: ChannelHandlerContext, holding: Int) -> Bool {
        switch reply {
        case .result(let result, let id) where framing != .messages:
            let length = RPCReplyWriter.resultLength(result, id: id)
            guard length <= Self.coalescingLimit else {
                return writeLarge(result, id: id, length: length, to: context, holding: holding)
            }
            let bytes = framing.size(payloadLength: length)
            guard charge(bytes, holding: holding) else { return false }
            flushPending = true
            uncounted += bytes
            pendingCharge += bytes
            var buffer = takePending(context, room: bytes)
            // The header and the reply in one pass over the buffer's memory (`RPCReplyWriter.writeResult`):
            // one write of the buffer per reply instead of two, each checking its room and exclusive access.
            let framing = framing
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: bytes) { memory in
                let header = framing.storeHeader(payloadLength: length, into: memory)
                return header + RPCReplyWriter.writeResult(
                    result, id: id, to: UnsafeMutableRawBufferPointer(rebasing: memory[header...]))
            }
            pending = buffer
            return true
        case .serialized(let payload):
            return write(payload, to: context, force: false, holding: holding)
        case .result, .error:
            break
        }
        return write(reply.serialized, to: context, force: false, holding: holding)
    }

    /// A result too large to copy into the output buffer, written as it is between the reply's head (behind the
    /// frame's header) and its tail: three buffers in one `writev`, with one promise that gives back the whole
    /// charge, where serializing it first copied it into a buffer of its own (a 1 MiB echo's result).
    private func writeLarge(
        _ result: ByteBuffer, id: RPCID, length: Int, to context: ChannelHandlerContext, holding: Int
    ) -> Bool {
        let bytes = framing.size(payloadLength: length)
        guard charge(bytes, holding: holding) else { return false }
        flushPending = true
        uncounted += bytes
        handOverPending(context)
        var head = context.channel.allocator.buffer(capacity: bytes - length + RPCReplyWriter.resultOverhead)
        framing.writeHeader(payloadLength: length, into: &head)
        RPCReplyWriter.writeResultHead(into: &head)
        var tail = context.channel.allocator.buffer(capacity: RPCReplyWriter.resultOverhead + id.rawJSON.readableBytes)
        RPCReplyWriter.writeResultTail(id: id, into: &tail)
        context.write(NIOAny(head), promise: nil)
        context.write(NIOAny(result), promise: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.write(NIOAny(tail), promise: written)
        written.futureResult.whenComplete { [account] _ in account.release(bytes) }
        return true
    }

    /// Payloads up to this size are copied into the output buffer; larger ones are written as they are.
    static let coalescingLimit = LengthPrefixedFrameEncoder.defaultCoalescingLimit

    /// The output buffer, or a new one with room for `room` bytes, taken out of `pending` to be written and put
    /// back by the caller: `pending` is then only ever read or assigned, never modified across a call (as
    /// `pending!.write...` or `pending.take()` would), so the optimizer proves its accesses never overlap and
    /// checks none of them at run time. Read, then cleared, so that the buffer taken is the only reference and
    /// appending to it does not copy it.
    private func takePending(_ context: ChannelHandlerContext, room: Int) -> ByteBuffer {
        guard let buffer = pending else { return context.channel.allocator.buffer(capacity: max(room, lastSize)) }
        pending = nil
        return buffer
    }

    /// Charges `bytes`, of which the account holds `holding` already: one change to the account (what a call
    /// holds moves to its reply), checked against the limits as giving back `holding` and charging `bytes`
    /// would be. Refused, `holding` is given back all the same.
    private func charge(_ bytes: Int, holding: Int) -> Bool {
        if bytes > holding {
            guard account.charge(bytes - holding) else {
                if holding > 0 { account.release(holding) }
                return false
            }
        } else if bytes < holding {
            account.release(holding - bytes)
        }
        return true
    }

    /// Sends what was written; the account gets it back once the socket has taken it.
    func flush(_ context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        if uncounted > 0 {
            sent?.increment(by: uncounted)
            uncounted = 0
        }
        handOverPending(context)
        context.flush()
    }

    /// Gives the output buffer to the channel, with the promise that releases its charge once it is written.
    private func handOverPending(_ context: ChannelHandlerContext) {
        guard let buffer = pending ?? heldBackMessage else { return }
        heldBackMessage = nil
        pending = nil
        let charge = pendingCharge
        pendingCharge = 0
        lastSize = min(Self.maximumStartCapacity, max(Self.minimumCapacity, buffer.readableBytes))
        let written = context.eventLoop.makePromise(of: Void.self)
        context.write(NIOAny(buffer), promise: written)
        written.futureResult.whenComplete { [account] _ in account.release(charge) }
    }

    /// The connection is gone: what was pending is dropped (closing the account gave its charge back).
    func drop() {
        heldBackMessage = nil
        pending = nil
        pendingCharge = 0
        flushPending = false
        uncounted = 0
    }
}
