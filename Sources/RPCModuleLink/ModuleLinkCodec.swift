package import NIOCore
import RPCWire

/// Turns the link's frames into `ModuleLinkMessage`s and back; the same on both ends of the link.
///
/// Inbound it takes whole frames (`ModuleLinkFrameReceiver` before it) and passes the messages of each read on
/// as one array at the read's end (`ModuleLinkFrameReceiver.ReadEnded`), as outbound: a message each would be a
/// boxed `NIOAny`, an allocation and a dynamic cast per message on each end of the link. Nothing is held longer
/// than before: rpcd's end charges each answer right after the read that brought it, as it did one by one. A
/// frame that is no message fires `ModuleLinkError` after the messages before it, which the end's handler
/// answers by closing the link.
///
/// Outbound it takes the messages of a burst as one write (an array: one pass through the pipeline, where a
/// message each would be a boxed `NIOAny` and a pass each), gathers every message written until the next
/// flush into one buffer, each behind its length, and hands that buffer on at the flush: a burst of calls
/// (rpcd) or of answers (a host) is one buffer and one `write` system call, like redis' output buffer. A
/// message's `tail` of at least `copyLimit` bytes (a large params or result) is not copied: the buffer so far
/// is handed on, then the tail as it is.
///
///     write([call 1, call 2, call 3 + 1 MiB params, cancel 2]), flush:
///       [len|call 1|len|call 2|len|call 3 head]   [1 MiB params]   [len|cancel 2]   (three buffers, one writev)
///
/// Nothing is held past a flush, and the promises of a write complete when all it wrote is written.
/// Runs on the channel's event loop.
package final class ModuleLinkCodec: ChannelDuplexHandler {
    package typealias InboundIn = ByteBuffer
    /// The messages of one read burst, in order.
    package typealias InboundOut = [ModuleLinkMessage]
    /// The messages of one burst, in order.
    package typealias OutboundIn = [ModuleLinkMessage]
    package typealias OutboundOut = ByteBuffer

    /// The largest frame either end accepts: above rpcd's own `MaxFrameSize=` ceiling a call could not have
    /// come in, and a host that sends more is broken (or hostile) and is not worth the memory.
    package static let maxFrameSize = 1 << 30
    /// A tail this large is written as its own buffer rather than copied: about where a copy costs more than
    /// the writev entry and the buffer's reference it saves.
    package static let copyLimit = 16 * 1024

    /// The frames written since the last flush; nil when there are none.
    private var pending: ByteBuffer?
    /// The promises of the messages in `pending`, cascaded into one.
    private var pendingPromise: EventLoopPromise<Void>?
    /// The size the next buffer starts at: what the last burst needed, so that a steady stream of bursts does
    /// not grow each buffer from small again (at most 64 KiB: a rare large burst does not stay reserved).
    private var capacityHint = 256
    /// The messages of the read so far.
    private var arriving = ModuleLinkBurst()

    package init() {}

    /// The pipeline handlers of one end of a link, before that end's own handler; rpcd's end admits the frames
    /// it gathers (`ModuleLinkFrameReceiver.Admission`). `descriptor` is the link's socket, from which a large
    /// frame's rest is read straight into its buffer (nil: a channel that is no socket, as in tests).
    package static func handlers(admission: ModuleLinkFrameReceiver.Admit? = nil, descriptor: Int32? = nil) -> [any ChannelHandler] {
        [ModuleLinkFrameReceiver(maxFrameSize: maxFrameSize, admission: admission, descriptor: descriptor), ModuleLinkCodec()]
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        do {
            arriving.append(try ModuleLinkMessage(frame: unwrapInboundIn(data)))
        } catch {
            handOn(context: context)
            context.fireErrorCaught(error)
        }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ModuleLinkFrameReceiver.ReadEnded else { return context.fireUserInboundEventTriggered(event) }
        handOn(context: context)
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        handOn(context: context)  // frames fed without the frame receiver (tests)
        context.fireChannelReadComplete()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        handOn(context: context)
        context.fireChannelInactive()
    }

    /// Passes the read's messages on.
    private func handOn(context: ChannelHandlerContext) {
        guard !arriving.isEmpty else { return }
        // Taken out first: what handles them may close the link, which hands on what `arriving` holds then.
        context.fireChannelRead(wrapInboundOut(arriving.take()))
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let promise {
            if let pendingPromise { pendingPromise.futureResult.cascade(to: promise) } else { pendingPromise = promise }
        }
        // Taken out of `pending`, so that this is the storage's only reference and appending does not copy it.
        var buffer = pending ?? context.channel.allocator.buffer(capacity: capacityHint)
        pending = nil
        for message in unwrapOutboundIn(data) {
            let tail = message.tail
            Self.writeFrameHead(message, tailLength: tail?.readableBytes ?? 0, to: &buffer)
            guard let tail, tail.readableBytes >= Self.copyLimit else {
                if let tail { buffer.writeImmutableBuffer(tail) }
                continue
            }
            context.write(wrapOutboundOut(buffer), promise: nil)
            context.write(wrapOutboundOut(tail), promise: nil)
            buffer = context.channel.allocator.buffer(capacity: capacityHint)
        }
        pending = buffer
    }

    package func flush(context: ChannelHandlerContext) {
        if let buffer = pending, buffer.readableBytes > 0 || pendingPromise != nil {
            capacityHint = min(max(256, buffer.readableBytes), 64 * 1024)
            // Empty after a large tail, it still carries the promises: completed after what went before.
            context.write(wrapOutboundOut(buffer), promise: pendingPromise)
            pendingPromise = nil
        }
        pending = nil
        context.flush()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        arriving = ModuleLinkBurst()
        // Written but never flushed, as NIO drops unflushed writes when a channel closes.
        pending = nil
        pendingPromise?.fail(ChannelError.ioOnClosedChannel)
        pendingPromise = nil
    }

    /// `message` as one frame: its length, then its payload (a copy: for tests and tools).
    package static func frame(_ message: ModuleLinkMessage, allocator: ByteBufferAllocator) -> ByteBuffer {
        let tail = message.tail
        var buffer = allocator.buffer(capacity: 64 + (tail?.readableBytes ?? 0))
        writeFrameHead(message, tailLength: tail?.readableBytes ?? 0, to: &buffer)
        if let tail { buffer.writeImmutableBuffer(tail) }
        return buffer
    }

    /// Appends `message`'s length and head; its `tail` (`tailLength` bytes) must follow.
    private static func writeFrameHead(_ message: ModuleLinkMessage, tailLength: Int, to buffer: inout ByteBuffer) {
        let start = buffer.writerIndex
        buffer.writeInteger(UInt32(0))  // the length, set below
        message.writeHead(to: &buffer)
        let length = buffer.writerIndex - start - LengthPrefixedFrameDecoder.headerSize + tailLength
        buffer.setInteger(UInt32(length), at: start)
    }
}
