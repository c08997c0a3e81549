import NIOCore
import RPCWire

/// Cuts a link's byte stream into frames (the wire format of `LengthPrefixedFrameDecoder`) and hands each
/// frame's payload on as a `ByteBuffer`; the same on both ends of the link.
///
/// A frame that is whole within a read is a slice of that read (no copy). A frame that spans reads is
/// gathered in a buffer of its own, allocated for the whole frame as soon as its length is known, and each
/// later read is appended to it in place: every byte of a 1 MiB params or result is copied once on its way
/// in, and the buffer never grows. (NIO's `ByteToMessageHandler` grows its buffer by doubling, copying the
/// frame so far at each step.) The buffer is the only reference to its storage while it gathers — never also
/// held in `state` during an append — or each append would copy the whole frame so far (copy-on-write).
///
///     read 1: [len 1 MiB|64 KiB of it]  ─► partial: 1 MiB + 4 allocated, 64 KiB copied in
///     read 2..16: [64 KiB]              ─► appended in place
///     read 17: [rest|len|frame|len|fr]  ─► rest appended: the frame handed on; the next frame handed on as a
///                                          slice of read 17; the start of the last copied into a new partial
///
/// An announced length above `maxFrameSize` fires `FrameTooLargeError` before anything of that size is
/// allocated, and everything after it is dropped (the end's handler closes the link). Frames above
/// `wholeAllocationLimit` are not allocated at once: their buffer doubles as bytes arrive (a host could
/// otherwise make rpcd reserve `maxFrameSize` by sending four bytes). A partial frame at the end of the
/// stream is dropped. Runs on the channel's event loop.
///
/// With an `admission` (rpcd's end), a frame that must be gathered across reads is held only if admitted, once
/// its length and its payload's first `ModuleLinkMessage.answerHeadSize` bytes are in view and before its
/// buffer is allocated: rpcd charges a module's reply to its caller as it arrives, and a reply the caller's
/// share cannot cover is skipped as its bytes arrive, never held (`Admission`). A frame whole within one read is
/// a slice of that read, which NIO bounds.
package final class ModuleLinkFrameReceiver: ChannelInboundHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    /// What to do with a frame that is to be gathered across reads.
    package enum Admission {
        /// Gather it, and hand it on whole.
        case hold
        /// Drop its bytes as they arrive; nothing is handed on.
        case skip
        /// Fire `ModuleLinkError(reason)`: the end's handler closes the link.
        case refuse(String)
    }

    /// Asked once per frame to be gathered, with a view of its payload's first bytes (at most
    /// `ModuleLinkMessage.answerHeadSize`) and its payload's length.
    package typealias Admit = (_ head: ByteBuffer, _ length: Int) -> Admission

    /// The largest frame allocated whole when its length arrives.
    package static let wholeAllocationLimit = 8 << 20

    private enum State {
        /// The next read starts with a frame.
        case atFrameStart
        /// The start of a frame (at least one byte) that has not all arrived, in a buffer of its own; `admitted`
        /// once the admission said `hold` (always without one).
        case partial(ByteBuffer, admitted: Bool)
        /// The rest of a skipped frame: this many bytes are dropped as they arrive.
        case skipping(Int)
        /// A frame's length was refused; the rest of the stream is dropped.
        case failed
    }

    private let maxFrameSize: Int
    private let admit: Admit?
    private var state = State.atFrameStart

    package init(maxFrameSize: Int, admission: Admit? = nil) {
        self.maxFrameSize = maxFrameSize
        self.admit = admission
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        do {
            try receive(&input, context: context)
        } catch {
            state = .failed
            switch error {
            case .frameTooLarge(let error): context.fireErrorCaught(error)
            case .refused(let error): context.fireErrorCaught(error)
            }
        }
    }

    private func receive(_ input: inout ByteBuffer, context: ChannelHandlerContext) throws(ModuleLinkReceiveError) {
        while true {
            switch state {
            case .failed:
                return
            case .skipping(let remaining):
                let dropped = min(remaining, input.readableBytes)
                input.moveReaderIndex(forwardBy: dropped)
                guard remaining == dropped else {
                    state = .skipping(remaining - dropped)
                    return
                }
                state = .atFrameStart
            case .partial(var buffered, var admitted):
                state = .atFrameStart  // `buffered` is now the storage's only reference: appends are in place
                switch try complete(&buffered, admitted: &admitted, from: &input) {
                case .whole:
                    context.fireChannelRead(wrapInboundOut(LengthPrefixedFrameDecoder.readFrame(from: &buffered)!))
                case .more:
                    state = .partial(buffered, admitted: admitted)
                    return
                case .skip(let remaining):
                    state = .skipping(remaining)
                }
            case .atFrameStart:
                guard input.readableBytes > 0 else { return }
                let scanned: LengthPrefixedFrameDecoder.Scan
                do {
                    scanned = try LengthPrefixedFrameDecoder.scan(input, maxFrameSize: maxFrameSize)
                } catch {
                    throw .frameTooLarge(error)
                }
                switch scanned {
                case .frame:
                    context.fireChannelRead(wrapInboundOut(LengthPrefixedFrameDecoder.readFrame(from: &input)!))
                case .needLength:
                    state = .partial(context.channel.allocator.buffer(capacity: LengthPrefixedFrameDecoder.headerSize), admitted: admit == nil)
                case .incomplete(let length):
                    // Allocated for the whole frame at once only when no admission is to be asked first.
                    let capacity = admit == nil ? Self.capacity(forFrame: length, holding: input.readableBytes) : Self.headBytes(length)
                    state = .partial(context.channel.allocator.buffer(capacity: capacity), admitted: admit == nil)
                }
            }
        }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        state = .atFrameStart
    }

    private enum Completion {
        case whole
        case more
        /// Not admitted: this many bytes of it are still to arrive, to be dropped.
        case skip(Int)
    }

    /// Appends to `buffered` (the start of a frame) what `input` holds of the rest of that frame, and no more
    /// (until it is `admitted`, no more than its head): whether the frame is whole now, or skipped.
    private func complete(
        _ buffered: inout ByteBuffer, admitted: inout Bool, from input: inout ByteBuffer
    ) throws(ModuleLinkReceiveError) -> Completion {
        while true {
            let total: Int
            let length: Int
            do {
                switch try LengthPrefixedFrameDecoder.scan(buffered, maxFrameSize: maxFrameSize) {
                case .frame:
                    return .whole
                case .needLength:
                    // The length's missing bytes first: once it is known, the buffer is made large enough for the frame.
                    total = LengthPrefixedFrameDecoder.headerSize
                    length = 0
                case .incomplete(let announced):
                    total = LengthPrefixedFrameDecoder.headerSize + announced
                    length = announced
                }
            } catch {
                throw .frameTooLarge(error)
            }
            if length > 0, !admitted {
                let head = Self.headBytes(length)
                if buffered.readableBytes >= head, let admit {
                    let view = buffered.getSlice(at: buffered.readerIndex + LengthPrefixedFrameDecoder.headerSize, length: head - LengthPrefixedFrameDecoder.headerSize)!
                    switch admit(view, length) {
                    case .hold: admitted = true
                    case .skip: return .skip(total - buffered.readableBytes)
                    case .refuse(let reason): throw .refused(ModuleLinkError(reason))
                    }
                }
            }
            guard input.readableBytes > 0 else { return .more }
            let limit = admitted || length == 0 ? total : Self.headBytes(length)
            var part = input.readSlice(length: min(input.readableBytes, limit - buffered.readableBytes))!
            let needed = buffered.readableBytes + part.readableBytes
            if length > 0, admitted, buffered.capacity - buffered.readerIndex < needed {
                buffered.reserveCapacity(Self.capacity(forFrame: length, holding: needed))
            }
            buffered.writeBuffer(&part)
        }
    }

    /// What of a frame of `length` payload bytes is gathered before it is admitted: its length and its head.
    private static func headBytes(_ length: Int) -> Int {
        LengthPrefixedFrameDecoder.headerSize + min(length, ModuleLinkMessage.answerHeadSize)
    }

    /// The capacity for a frame of `length` payload bytes of which `holding` bytes (with its length) have
    /// arrived: all of it, up to `wholeAllocationLimit`; above, twice what has arrived.
    private static func capacity(forFrame length: Int, holding: Int) -> Int {
        let total = LengthPrefixedFrameDecoder.headerSize + length
        guard total > wholeAllocationLimit else { return total }
        return min(total, max(wholeAllocationLimit, 2 * holding))
    }
}

/// Why a link's stream stops: a length past the limit, or a frame the admission refused.
enum ModuleLinkReceiveError: Error {
    case frameTooLarge(FrameTooLargeError)
    case refused(ModuleLinkError)
}
