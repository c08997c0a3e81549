package import NIOCore

/// The header of a WebSocket frame (RFC 6455 §5.2), read from the start of a buffer's readable bytes:
///
///     byte 0        FIN, RSV1-3, opcode (4 bits)
///     byte 1        MASK, payload length (7 bits: 0-125, or 126: 16 bits follow, or 127: 64 bits follow)
///     2 or 8        the extended length, big-endian
///     4             the mask key, when MASK is set
///
/// `read` judges what the frame layer must refuse as soon as the length is known, before the mask key or any
/// payload has arrived, exactly as NIO's `WebSocketFrameDecoder` does (the fuzz harness `fuzz-websocket`
/// holds the two to the same frames and the same refusals, however a stream is cut): a frame longer than
/// the limit, a fragmented control frame, a control frame longer than 125 bytes. What the frames mean
/// (opcodes, masking, fragments in order) is the next layer's to judge.
package struct WebSocketFrameHead: Hashable, Sendable {
    /// FIN, RSV1-3 and the opcode, as they came.
    package var firstByte: UInt8
    /// The mask key's bytes in the order they came, the first in the top byte; nil when the frame is not masked.
    package var maskKey: UInt32?
    /// The payload's length.
    package var length: Int
    /// The header's size: 2, 4 or 10 bytes, and 4 more with a mask key.
    package var size: Int

    package var fin: Bool { firstByte & 0x80 != 0 }
    /// The opcode's 4 bits (RFC 6455 §5.2): 0 continuation, 1 text, 2 binary, 8 close, 9 ping, 10 pong.
    package var opcode: UInt8 { firstByte & 0x0F }
    /// Close, ping, pong and the reserved control opcodes 0xB-0xF.
    package var isControl: Bool { firstByte & 0x08 != 0 }
    /// The whole frame's size, header and payload.
    package var frameSize: Int { size + length }

    package init(firstByte: UInt8, maskKey: UInt32?, length: Int, size: Int) {
        self.firstByte = firstByte
        self.maskKey = maskKey
        self.length = length
        self.size = size
    }

    /// The header at the start of `buffer`'s readable bytes; nil while part of it has not arrived. Throws as
    /// soon as the length has arrived for a frame the frame layer refuses (longer than `maxFrameSize`, or a
    /// control frame that is fragmented or longer than 125 bytes).
    package static func read(from buffer: ByteBuffer, maxFrameSize: Int) throws(WebSocketFrameError) -> WebSocketFrameHead? {
        // One pass over the bytes in place, not one `getInteger` at a time (bench/README.md, "Issue 23's
        // fourth round", headers read in place).
        let reading = buffer.withUnsafeReadableBytes { bytes in Self.read(bytes, maxFrameSize: maxFrameSize) }
        switch reading {
        case .head(let head): return head
        case .needMore: return nil
        case .refused(let error): throw error
        }
    }

    /// The payload of `frame`, a whole frame with this header at the start of its readable bytes.
    package func payload(of frame: ByteBuffer) -> ByteBuffer {
        frame.getSlice(at: frame.readerIndex + size, length: length)!
    }

    private enum Reading {
        case head(WebSocketFrameHead)
        case needMore
        case refused(WebSocketFrameError)
    }

    private static func read(_ bytes: UnsafeRawBufferPointer, maxFrameSize: Int) -> Reading {
        guard let start = readStart(bytes) else { return .needMore }
        guard start.length <= UInt64(maxFrameSize) else { return .refused(.tooLong) }
        let length = Int(start.length)
        let first = start.firstByte
        let isControl = first & 0x08 != 0
        if isControl && first & 0x80 == 0 { return .refused(.fragmentedControlFrame) }
        if isControl && length > 125 { return .refused(.controlFrameTooLong) }
        guard start.masked else {
            return .head(WebSocketFrameHead(firstByte: first, maskKey: nil, length: length, size: start.size))
        }
        guard bytes.count >= start.size + 4 else { return .needMore }
        let key = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: start.size, as: UInt32.self))
        return .head(WebSocketFrameHead(firstByte: first, maskKey: key, length: length, size: start.size + 4))
    }

    /// A header's first byte, mask bit and length, as far as they go: `size` bytes, before any mask key.
    struct Start {
        var firstByte: UInt8
        var masked: Bool
        var length: UInt64
        var size: Int
    }

    /// The start of the header at the start of `bytes`, unjudged; nil while part of its length has not
    /// arrived. The one reading of the length's three forms, for `read` and `WebSocketFrameScanner`.
    static func readStart(_ bytes: UnsafeRawBufferPointer) -> Start? {
        guard bytes.count >= 2 else { return nil }
        let second = bytes[1]
        var start = Start(firstByte: bytes[0], masked: second & 0x80 != 0, length: UInt64(second & 0x7F), size: 2)
        switch second & 0x7F {
        case 126:
            guard bytes.count >= 4 else { return nil }
            start.length = UInt64(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
            start.size = 4
        case 127:
            guard bytes.count >= 10 else { return nil }
            start.length = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 2, as: UInt64.self))
            start.size = 10
        default:
            break
        }
        return start
    }
}

extension WebSocketFrameHead {
    /// What the readable bytes of a buffer start with.
    package enum Cut: Sendable {
        /// Part of a header: nothing is known yet.
        case needHeader
        /// A frame whose header has arrived, and part of its payload.
        case incomplete(WebSocketFrameHead)
        /// A whole frame, read from the buffer: its header, and the frame (header and payload) as a slice of
        /// the buffer (`payload(of:)`).
        case frame(WebSocketFrameHead, ByteBuffer)
    }

    /// Reads the whole frame at the start of `buffer`'s readable bytes, if it has all arrived (as it lies:
    /// `WebSocketFrameScanner` unmasks a stream before it is cut); leaves `buffer` as it is otherwise. Throws
    /// what `read` throws.
    package static func cut(from buffer: inout ByteBuffer, maxFrameSize: Int) throws(WebSocketFrameError) -> Cut {
        guard let head = try read(from: buffer, maxFrameSize: maxFrameSize) else { return .needHeader }
        guard buffer.readableBytes >= head.frameSize else { return .incomplete(head) }
        return .frame(head, buffer.readSlice(length: head.frameSize)!)
    }
}

/// A frame the frame layer refuses by its header (RFC 6455 §5.2, §5.5), known as soon as its length arrives.
package enum WebSocketFrameError: Error, Hashable, Sendable {
    /// Longer than the receiver's limit (`MaxFrameSize=`), or than an `Int` holds.
    case tooLong
    /// A control frame without FIN (§5.5: control frames are never fragmented).
    case fragmentedControlFrame
    /// A control frame with more than 125 bytes of payload (§5.5).
    case controlFrameTooLong
}
