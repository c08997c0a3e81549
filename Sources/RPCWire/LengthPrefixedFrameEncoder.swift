import NIOCore

/// Frames each outgoing payload: its length as a big-endian u32, then its bytes (the format
/// `LengthPrefixedFrameDecoder` draws).
///
/// A small payload (at most `coalescingLimit` bytes, which every ordinary reply is) is copied behind its
/// length into one buffer, so it costs one pending write instead of two; a larger one is written as a separate
/// length and the payload itself, never copied. `LengthFieldPrepender` always writes two, and with many small
/// replies per read burst the second pending write costs more than the copy.
///
/// Runs on the channel's event loop like any `ChannelOutboundHandler`.
public final class LengthPrefixedFrameEncoder: ChannelOutboundHandler {
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// Payloads up to this many bytes are copied into one buffer with their length.
    public let coalescingLimit: Int

    public init(coalescingLimit: Int = 4096) {
        self.coalescingLimit = coalescingLimit
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let payload = unwrapOutboundIn(data)
        if payload.readableBytes <= coalescingLimit {
            var frame = context.channel.allocator.buffer(capacity: LengthPrefixedFrameDecoder.headerSize + payload.readableBytes)
            frame.writeLengthPrefixedFrame(payload)
            context.write(wrapOutboundOut(frame), promise: promise)
        } else {
            var header = context.channel.allocator.buffer(capacity: LengthPrefixedFrameDecoder.headerSize)
            header.writeInteger(UInt32(payload.readableBytes), endianness: .big)
            context.write(wrapOutboundOut(header), promise: nil)
            context.write(wrapOutboundOut(payload), promise: promise)
        }
    }
}
