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
package final class ModuleLinkFrameReceiver: ChannelInboundHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    /// The largest frame allocated whole when its length arrives.
    package static let wholeAllocationLimit = 8 << 20

    private enum State {
        /// The next read starts with a frame.
        case atFrameStart
        /// The start of a frame (at least one byte) that has not all arrived, in a buffer of its own.
        case partial(ByteBuffer)
        /// A frame's length was refused; the rest of the stream is dropped.
        case failed
    }

    private let maxFrameSize: Int
    private var state = State.atFrameStart

    package init(maxFrameSize: Int) {
        self.maxFrameSize = maxFrameSize
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        do {
            switch state {
            case .failed:
                return
            case .partial(var buffered):
                state = .atFrameStart  // `buffered` is now the storage's only reference: appends are in place
                guard try complete(&buffered, from: &input) else {
                    state = .partial(buffered)
                    return
                }
                context.fireChannelRead(wrapInboundOut(LengthPrefixedFrameDecoder.readFrame(from: &buffered)!))
            case .atFrameStart:
                break
            }
            while input.readableBytes > 0 {
                switch try LengthPrefixedFrameDecoder.scan(input, maxFrameSize: maxFrameSize) {
                case .frame:
                    context.fireChannelRead(wrapInboundOut(LengthPrefixedFrameDecoder.readFrame(from: &input)!))
                case .needLength:
                    var buffered = context.channel.allocator.buffer(capacity: LengthPrefixedFrameDecoder.headerSize)
                    buffered.writeBuffer(&input)
                    state = .partial(buffered)
                case .incomplete(let length):
                    var buffered = context.channel.allocator.buffer(capacity: Self.capacity(forFrame: length, holding: input.readableBytes))
                    buffered.writeBuffer(&input)
                    state = .partial(buffered)
                }
            }
        } catch {
            state = .failed
            context.fireErrorCaught(error)
        }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        state = .atFrameStart
    }

    /// Appends to `buffered` (the start of a frame) what `input` holds of the rest of that frame, and no more:
    /// whether the frame is whole now.
    private func complete(_ buffered: inout ByteBuffer, from input: inout ByteBuffer) throws(FrameTooLargeError) -> Bool {
        while true {
            let total: Int
            let length: Int
            switch try LengthPrefixedFrameDecoder.scan(buffered, maxFrameSize: maxFrameSize) {
            case .frame:
                return true
            case .needLength:
                // The length's missing bytes first: once it is known, the buffer is made large enough for the frame.
                total = LengthPrefixedFrameDecoder.headerSize
                length = 0
            case .incomplete(let announced):
                total = LengthPrefixedFrameDecoder.headerSize + announced
                length = announced
            }
            guard input.readableBytes > 0 else { return false }
            var part = input.readSlice(length: min(input.readableBytes, total - buffered.readableBytes))!
            let needed = buffered.readableBytes + part.readableBytes
            if length > 0, buffered.capacity - buffered.readerIndex < needed {
                buffered.reserveCapacity(Self.capacity(forFrame: length, holding: needed))
            }
            buffered.writeBuffer(&part)
        }
    }

    /// The capacity for a frame of `length` payload bytes of which `holding` bytes (with its length) have
    /// arrived: all of it, up to `wholeAllocationLimit`; above, twice what has arrived.
    private static func capacity(forFrame length: Int, holding: Int) -> Int {
        let total = LengthPrefixedFrameDecoder.headerSize + length
        guard total > wholeAllocationLimit else { return total }
        return min(total, max(wholeAllocationLimit, 2 * holding))
    }
}
