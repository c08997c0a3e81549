package import NIOCore

/// Splits a byte stream into frames, each a 4-byte unsigned big-endian payload length followed by the payload.
///
///     0                   1                   2                   3
///     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
///    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///    |                 payload length (big-endian u32)               |
///    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///    |              payload: `length` bytes of UTF-8 JSON ...        |
///    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///
/// Emits each payload as a `ByteBuffer` (a zero-length frame gives an empty buffer; deciding what that means
/// is the next handler's job). The cutting is `LengthPrefixedFrameCutter`'s, the one cutter of the wire format
/// (rpcd's `FrameReceiver` and both ends of a module link use it too): a frame whole within what
/// `ByteToMessageHandler` passes in is a slice of it, one that spans reads is gathered in a buffer allocated for
/// the whole frame (up to `LengthPrefixedFrameCutter.wholeAllocationLimit`), so `ByteToMessageHandler` never
/// holds more than a read and a large reply is copied once. An announced length above `maxFrameSize` throws
/// `FrameTooLargeError` as soon as the four length bytes arrive, so no buffer of the announced size is ever
/// accumulated; after that `ByteToMessageHandler` drops all further input and the pipeline answers and closes.
///
/// The client's pipeline uses this decoder. Runs on the channel's event loop like any `ByteToMessageDecoder`.
package struct LengthPrefixedFrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = ByteBuffer

    /// Size of the length prefix in bytes.
    package static let headerSize = 4

    package var maxFrameSize: Int { cutter.maxFrameSize }
    private var cutter: LengthPrefixedFrameCutter

    package init(maxFrameSize: Int) {
        cutter = LengthPrefixedFrameCutter(maxFrameSize: maxFrameSize)
    }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        switch cutter.next(from: &buffer) {
        case .frame(let payload):
            context.fireChannelRead(Self.wrapInboundOut(payload))
            return .continue
        case .needMoreData, .stopped:
            return .needMoreData
        case .tooLarge(let error):
            throw error
        case .admit:
            preconditionFailure("a cutter without admission asks nothing")
        }
    }

    /// What the readable bytes of `buffer` start with.
    package enum Scan: Hashable, Sendable {
        /// Fewer than the four bytes of a length.
        case needLength
        /// A length (at most the maximum), and not all of its payload yet.
        case incomplete(announcedLength: Int)
        /// A whole frame with a payload of `length` bytes: `readFrame(from:)` takes it.
        case frame(length: Int)
    }

    /// Reads the length at the start of `buffer` without consuming anything; a length above `maxFrameSize`
    /// throws `FrameTooLargeError`. The wire format's one reading (`LengthPrefixedFrameCutter` cuts with it).
    package static func scan(_ buffer: ByteBuffer, maxFrameSize: Int) throws(FrameTooLargeError) -> Scan {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return .needLength
        }
        guard length <= maxFrameSize else {
            throw FrameTooLargeError(announcedLength: Int(length), maxFrameSize: maxFrameSize)
        }
        guard buffer.readableBytes >= headerSize + Int(length) else { return .incomplete(announcedLength: Int(length)) }
        return .frame(length: Int(length))
    }

    /// Takes the whole frame at the start of `buffer` (see `scan`) and returns its payload, a slice; nil, and
    /// nothing consumed, when the frame is not complete.
    package static func readFrame(from buffer: inout ByteBuffer) -> ByteBuffer? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self),
              buffer.readableBytes >= headerSize + Int(length)
        else { return nil }
        buffer.moveReaderIndex(forwardBy: headerSize)
        return buffer.readSlice(length: Int(length))
    }

    package mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        // Complete frames still buffered at EOF are delivered; a truncated tail (in `buffer` or gathered by the
        // cutter) has nobody to answer and is dropped.
        while try self.decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

/// A peer announced a frame longer than the configured maximum.
package struct FrameTooLargeError: Error, Hashable, Sendable, CustomStringConvertible {
    package var announcedLength: Int
    package var maxFrameSize: Int

    package init(announcedLength: Int, maxFrameSize: Int) {
        self.announcedLength = announcedLength
        self.maxFrameSize = maxFrameSize
    }

    /// Whether the four bytes read as the length are the start of a TLS record instead (a handshake or an
    /// alert, versions 3.1 to 3.3): a TLS client speaking to a plain listener, or a TLS server answering a
    /// plain client. Such a length is always far above any frame limit.
    package var looksLikeTLS: Bool {
        let contentType = announcedLength >> 24, major = (announcedLength >> 16) & 0xFF, minor = (announcedLength >> 8) & 0xFF
        return (contentType == 0x15 || contentType == 0x16) && major == 3 && (1...4).contains(minor)
    }

    package var description: String {
        "frame of \(announcedLength) bytes exceeds the maximum frame size of \(maxFrameSize) bytes"
    }
}

extension ByteBuffer {
    /// Writes `payload` as one frame: its length as a big-endian u32, then its bytes (a copy:
    /// `LengthPrefixedFrameEncoder` writes large payloads without one).
    package mutating func writeLengthPrefixedFrame(_ payload: ByteBuffer) {
        self.writeInteger(UInt32(payload.readableBytes), endianness: .big)
        self.writeImmutableBuffer(payload)
    }

    /// Writes `payload` (UTF-8 text) as one frame.
    package mutating func writeLengthPrefixedFrame(_ payload: String) {
        self.writeInteger(UInt32(payload.utf8.count), endianness: .big)
        self.writeString(payload)
    }

    /// A buffer holding `payload` (UTF-8 text) as one frame, as a peer sends it.
    package init(lengthPrefixedFrame payload: String) {
        self.init()
        self.writeLengthPrefixedFrame(payload)
    }
}
