package import NIOCore
import RPCWire

/// rpcd's framing (docs/PROTOCOL.md: a big-endian u32 length, then that many bytes) as a test writes and reads
/// it by hand: the one place tests do. Well-formed frames come from RPCWire's own writer; the header alone is
/// for hostile input, which announces lengths it never sends.
package enum WireFrame {
    /// `payload` (UTF-8 text) as one frame.
    package static func bytes(_ payload: String) -> [UInt8] {
        Array(ByteBuffer(lengthPrefixedFrame: payload).readableBytesView)
    }

    /// `payload` as one frame.
    package static func bytes(_ payload: [UInt8]) -> [UInt8] {
        header(announcing: payload.count) + payload
    }

    /// The four bytes that announce a frame of `length` bytes.
    package static func header(announcing length: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(length).bigEndian, Array.init)
    }

    /// Reads the whole frames at the front of `bytes` and returns their payloads as text; the bytes of a
    /// frame not yet complete stay in `bytes`.
    package static func payloads(in bytes: inout ByteBuffer) -> [String] {
        var payloads: [String] = []
        while let length = bytes.getInteger(at: bytes.readerIndex, endianness: .big, as: UInt32.self),
            bytes.readableBytes >= 4 + Int(length)
        {
            bytes.moveReaderIndex(forwardBy: 4)
            payloads.append(bytes.readString(length: Int(length))!)
        }
        return payloads
    }
}
