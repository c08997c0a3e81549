package import NIOCore
import RPCWire

#if canImport(Glibc)
import Glibc
#endif

/// Cuts a link's byte stream into frames (the wire format of `LengthPrefixedFrameDecoder`, with RPCWire's
/// `LengthPrefixedFrameCutter`) and hands each frame's payload on as a `ByteBuffer`; the same on both ends of
/// the link. This handler does the I/O and asks the admission; the cutting is the cutter's.
///
/// A frame that is whole within a read is a slice of that read (no copy). A frame that spans reads is
/// gathered in a buffer of its own, allocated for the whole frame as soon as its length is known, and the
/// buffer never grows. Given the link's socket (`descriptor`), the frame's rest is read from the socket
/// straight into that buffer, up to the frame's end and no further (`readRest`): most of a 1 MiB params or
/// result goes from the kernel into its frame's buffer with no copy in between. Without it (a channel that
/// is no socket), each later read is appended to the buffer in place, every byte copied once more. (NIO's
/// `ByteToMessageHandler` grows its buffer by doubling, copying the frame so far at each step.)
///
///     read 1: [len 1 MiB|64 KiB of it]  ─► partial: 1 MiB + 4 allocated, 64 KiB copied in; then what the
///                                          socket holds of the frame read into it, until the socket is empty
///     read 2: [64 KiB of it]            ─► appended in place; the socket read into it again ...
///     read n: [rest|len|frame|len|fr]   ─► rest appended: the frame handed on; the next frame handed on as a
///                                          slice of read n; the start of the last copied into a new partial
///                                          (without the socket, reads 2 to n-1 are 64 KiB appended each)
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
    package typealias Admit = @Sendable (_ head: ByteBuffer, _ length: Int) -> Admission

    /// Fired after a read's frames have been handed on, when it had any: `ModuleLinkCodec` passes a read's
    /// messages on together then, so that rpcd's end charges each answer right after the read that brought it.
    package struct ReadEnded: Sendable {}

    /// The largest frame allocated whole when its length arrives.
    package static let wholeAllocationLimit = LengthPrefixedFrameCutter.wholeAllocationLimit

    private var cutter: LengthPrefixedFrameCutter
    private let admit: Admit?
    /// The link's socket, which the channel reads; nil: frames are gathered from the channel's reads only.
    private let descriptor: Int32?

    /// With `descriptor` (the socket the channel reads), the rest of a frame being gathered is read from it
    /// straight into the frame's buffer (`readRest`).
    package init(maxFrameSize: Int, admission: Admit? = nil, descriptor: Int32? = nil) {
        cutter = LengthPrefixedFrameCutter(
            maxFrameSize: maxFrameSize, admissionHeadSize: admission == nil ? nil : ModuleLinkMessage.answerHeadSize)
        self.admit = admission
        self.descriptor = descriptor
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        var handedOn = false
        var drained = false
        defer { if handedOn { context.fireUserInboundEventTriggered(ReadEnded()) } }
        while true {
            switch cutter.next(from: &input) {
            case .frame(let payload):
                handedOn = true
                context.fireChannelRead(wrapInboundOut(payload))
            case .admit(let head, let length):
                switch admit!(head, length) {
                case .hold: cutter.decide(.hold)
                case .skip: cutter.decide(.skip)
                case .refuse(let reason):
                    cutter.stop()
                    return context.fireErrorCaught(ModuleLinkError(reason))
                }
            case .needMoreData:
                // All of `input` is taken: cut on (an empty read) only if the socket gave more of the frame.
                guard let descriptor, !drained, context.channel.isActive else { return }
                let (got, filled) = readRest(from: descriptor)
                drained = !filled
                guard got else { return }
            case .stopped:
                return
            case .tooLarge(let error):
                return context.fireErrorCaught(error)
            }
        }
    }

    /// Reads what the link's socket holds of the frame being gathered straight into the frame's buffer, never
    /// past its end: a large params or result crosses from the kernel into its frame's buffer once, instead of
    /// into the channel's read buffer (64 KiB at most a read) and from there into the frame's. Its first bytes
    /// still come through the channel's read, which the admission sees; nothing after the frame is taken, so the
    /// channel's own reads (and a peer's turns, `ModuleLinkClient`) stay in charge of what comes next. The
    /// channel is active here, so `descriptor` is still its socket; the end of input or an error is left to the
    /// channel's next read. Whether bytes came, and whether they filled the room (the socket may hold more).
    private func readRest(from descriptor: Int32) -> (got: Bool, filled: Bool) {
        // Changed in place through `frame`, its buffer's only reference: no copy on write.
        guard var frame = cutter.takeGathered() else { return (false, false) }
        let missing = frame.missing
        var result = 0
        var asked = 0
        repeat {
            frame.buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { room in
                asked = min(missing, room.count)
                result = read(descriptor, room.baseAddress, asked)
                return max(0, result)
            }
        } while result < 0 && errno == EINTR
        cutter.putBack(frame.buffer)
        // 0 is the end of input, less an error (EAGAIN: the rest comes with a later read): the channel's next
        // read sees either.
        return (result > 0, result == asked)
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        cutter.stop()
    }
}
