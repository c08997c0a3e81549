package import NIOCore
import RPCWire

/// Cuts a link's byte stream into frames (the wire format of `LengthPrefixedFrameDecoder`, with RPCWire's
/// `LengthPrefixedFrameCutter`) and hands each frame's payload on as a `ByteBuffer`; the same on both ends of
/// the link. This handler does the I/O and asks the admission; the cutting is the cutter's.
///
/// A frame that is whole within a read is a slice of that read (no copy). A frame that spans reads is
/// gathered in a buffer of its own, allocated for the whole frame as soon as its length is known, and each
/// later read is appended to it in place: every byte of a 1 MiB params or result is copied once on its way
/// in, and the buffer never grows. (NIO's `ByteToMessageHandler` grows its buffer by doubling, copying the
/// frame so far at each step.)
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
    package typealias Admit = @Sendable (_ head: ByteBuffer, _ length: Int) -> Admission

    /// Fired after a read's frames have been handed on, when it had any: `ModuleLinkCodec` passes a read's
    /// messages on together then, so that rpcd's end charges each answer right after the read that brought it.
    package struct ReadEnded: Sendable {}

    /// The largest frame allocated whole when its length arrives.
    package static let wholeAllocationLimit = LengthPrefixedFrameCutter.wholeAllocationLimit

    private var cutter: LengthPrefixedFrameCutter
    private let admit: Admit?

    package init(maxFrameSize: Int, admission: Admit? = nil) {
        cutter = LengthPrefixedFrameCutter(
            maxFrameSize: maxFrameSize, admissionHeadSize: admission == nil ? nil : ModuleLinkMessage.answerHeadSize)
        self.admit = admission
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        var handedOn = false
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
            case .needMoreData, .stopped:
                return
            case .tooLarge(let error):
                return context.fireErrorCaught(error)
            }
        }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        cutter.stop()
    }
}
