import NIOCore
import RPCWire

/// rpcd's framing (docs/PROTOCOL.md: a big-endian u32 length, then that many bytes) as the bytes a test sends
/// by hand: the one place tests write it. Well-formed frames come from RPCWire's own writer; the header alone
/// is for hostile input, which announces lengths it never sends.
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
}
