package import NIOCore

/// Frames each outgoing payload: its length as a big-endian u32, then its bytes (the format
/// `LengthPrefixedFrameDecoder` draws).
///
/// A small payload (at most `coalescingLimit` bytes, which every ordinary reply is) is copied behind its
/// length into one buffer, so it costs one pending write instead of two; a larger one is written as a separate
/// length and the payload itself, never copied. `LengthFieldPrepender` always writes two, and with many small
/// replies per read burst the second pending write costs more than the copy.
///
/// The client's pipeline uses this handler (`RPCSocketTransport.framingHandlers`). A handler that produces
/// the payloads itself can frame them with `write(_:framedTo:promise:)` instead, and spare its connections
/// this handler (rpcd's connection handler does: a handler per connection is memory per idle connection, and
/// a pipeline hop per reply).
///
/// Runs on the channel's event loop like any `ChannelOutboundHandler`.
package final class LengthPrefixedFrameEncoder: ChannelOutboundHandler {
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    /// Payloads up to this many bytes are copied into one buffer with their length.
    package let coalescingLimit: Int

    package static let defaultCoalescingLimit = 4096

    package init(coalescingLimit: Int = LengthPrefixedFrameEncoder.defaultCoalescingLimit) {
        self.coalescingLimit = coalescingLimit
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        Self.write(unwrapOutboundIn(data), framedTo: context, coalescingLimit: coalescingLimit, promise: promise)
    }

    /// Writes `payload` as one frame to the handlers before `context` (the encoding this handler does).
    package static func write(
        _ payload: ByteBuffer, framedTo context: ChannelHandlerContext, coalescingLimit: Int = defaultCoalescingLimit,
        promise: EventLoopPromise<Void>?
    ) {
        if payload.readableBytes <= coalescingLimit {
            var frame = context.channel.allocator.buffer(capacity: LengthPrefixedFrameDecoder.headerSize + payload.readableBytes)
            frame.writeLengthPrefixedFrame(payload)
            context.write(NIOAny(frame), promise: promise)
        } else {
            var header = context.channel.allocator.buffer(capacity: LengthPrefixedFrameDecoder.headerSize)
            header.writeInteger(UInt32(payload.readableBytes), endianness: .big)
            context.write(NIOAny(header), promise: nil)
            context.write(NIOAny(payload), promise: promise)
        }
    }
}
