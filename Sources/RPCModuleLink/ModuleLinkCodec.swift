import NIOCore
import RPCWire

/// Turns the link's frames into `ModuleLinkMessage`s and back; the same on both ends of the link.
///
/// Inbound it takes whole frames (a `LengthPrefixedFrameDecoder` before it) and passes messages on; a frame
/// that is no message fires `ModuleLinkError`, which the end's handler answers by closing the link. Outbound
/// it writes each message as one frame, length and payload in one buffer. Runs on the channel's event loop.
package final class ModuleLinkCodec: ChannelDuplexHandler {
    package init() {}

    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ModuleLinkMessage
    package typealias OutboundIn = ModuleLinkMessage
    package typealias OutboundOut = ByteBuffer

    /// The largest frame either end accepts: above rpcd's own `MaxFrameSize=` ceiling a call could not have
    /// come in, and a host that sends more is broken (or hostile) and is not worth the memory.
    package static let maxFrameSize = 1 << 30

    /// The pipeline handlers of one end of a link, before that end's own handler.
    package static func handlers() -> [any ChannelHandler] {
        [ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: maxFrameSize)), ModuleLinkCodec()]
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        do {
            context.fireChannelRead(wrapInboundOut(try ModuleLinkMessage(frame: unwrapInboundIn(data))))
        } catch {
            context.fireErrorCaught(error)
        }
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(wrapOutboundOut(Self.frame(unwrapOutboundIn(data), allocator: context.channel.allocator)), promise: promise)
    }

    /// `message` as one frame: its length, then its payload.
    package static func frame(_ message: ModuleLinkMessage, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 64)
        buffer.writeInteger(UInt32(0))  // the length, set below
        message.write(to: &buffer)
        buffer.setInteger(UInt32(buffer.readableBytes - LengthPrefixedFrameDecoder.headerSize), at: buffer.readerIndex)
        return buffer
    }
}
