/// Follows the frames of a client's WebSocket byte stream as it arrives, read by read, without holding any
/// of it (RFC 6455 §5.2), and unmasks their payloads where they lie:
///
///     +-+-+-+-+-------+-+-------------+-------------------------------+---------------+----------...
///     |F|R|R|R| opcode|M| payload len |  extended length (0, 2 or 8)  | mask key (0/4) | payload
///     +-+-+-+-+-------+-+-------------+-------------------------------+---------------+----------...
///
/// rpcd's `WebSocketFrameReceiver` runs each read's new bytes through it before it cuts any frame out of them
/// (`WebSocketFrameHead`), so that no payload is written to after a slice of its buffer has been handed on.
/// Unmasking where the bytes lie, 8 at a time, costs one copy of each read (the receiver's: the channel holds
/// the read too); NIO's `WebSocketFrame.unmaskedData` copies each frame's payload into a buffer of its own and
/// unmasks it a byte at a time. A frame whose announced length passes what an `Int` holds keeps `Int.max`
/// bytes to come; the receiver refuses it by its header anyway.
///
/// A value type, kept by its handler between reads and copied into a local while one is scanned, so that the
/// per-byte work touches no class property.
package struct WebSocketFrameScanner: Sendable {
    /// Bytes of the current frame's header seen so far.
    private var headerSeen = 0
    /// The header's whole size, known from its second byte: 2, and 2 or 8 of extended length, and 4 of mask key.
    private var headerSize = 2
    private var extendedLengthSize = 0
    private var masked = false
    private var length: UInt64 = 0
    /// The mask key's bytes in the order they came, the first in the top byte.
    private var maskKey: UInt32 = 0
    /// The header is whole; the payload is passing.
    private var inPayload = false
    /// Payload bytes of the frame still to come.
    private var payloadLeft = 0
    /// Payload bytes of the frame unmasked so far: where in the mask key the next byte is.
    private var payloadSeen = 0

    package init() {}

    /// Scans `bytes`, the next bytes of the stream, unmasking the payload bytes among them in place.
    package mutating func scan(unmaskingIn bytes: UnsafeMutableRawBufferPointer) {
        var index = 0
        while index < bytes.count {
            if inPayload {
                let taken = min(payloadLeft, bytes.count - index)
                if masked { Self.unmask(bytes, from: index, count: taken, key: maskKey, phase: payloadSeen & 3) }
                index += taken
                payloadLeft -= taken
                payloadSeen += taken
            } else if headerSeen == 0 && bytes.count - index >= Self.longestHeader {
                index += readWholeHeader(bytes, at: index)  // the usual case: every header of a read in view
            } else {
                readHeaderByte(bytes[index])
                index += 1
            }
            if inPayload && payloadLeft == 0 { self = WebSocketFrameScanner() }  // whole
        }
    }

    /// 2 bytes, 8 of extended length, 4 of mask key.
    private static let longestHeader = 14

    /// Reads a header that is all in view, at once (`WebSocketFrameHead.readStart`); returns its size. Byte by
    /// byte, a header cost about as much as unmasking a `rpcd.ping` call's payload.
    private mutating func readWholeHeader(_ bytes: UnsafeMutableRawBufferPointer, at start: Int) -> Int {
        let view = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start...])
        let head = WebSocketFrameHead.readStart(view)!  // all 14 bytes a header may take are in view
        length = head.length
        masked = head.masked
        var size = head.size
        if masked {
            maskKey = UInt32(bigEndian: view.loadUnaligned(fromByteOffset: size, as: UInt32.self))
            size += 4
        }
        inPayload = true
        payloadLeft = Int(clamping: length)
        return size
    }

    private mutating func readHeaderByte(_ byte: UInt8) {
        switch headerSeen {
        case 0:
            break  // FIN, RSV, opcode: the receiver's to judge
        case 1:
            masked = byte & 0x80 != 0
            let short = byte & 0x7F
            extendedLengthSize = short == 126 ? 2 : short == 127 ? 8 : 0
            length = extendedLengthSize == 0 ? UInt64(short) : 0
            headerSize = 2 + extendedLengthSize + (masked ? 4 : 0)
        case ..<(2 + extendedLengthSize):
            length = length << 8 | UInt64(byte)
        default:
            maskKey = maskKey << 8 | UInt32(byte)
        }
        headerSeen += 1
        if headerSeen == headerSize {
            inPayload = true
            payloadLeft = Int(clamping: length)
        }
    }

    /// XORs `count` bytes from `start` with the mask key, beginning at its byte `phase` (RFC 6455 §5.3).
    private static func unmask(_ bytes: UnsafeMutableRawBufferPointer, from start: Int, count: Int, key: UInt32, phase: Int) {
        // The key turned so that its byte `phase` comes first, laid out in memory in arrival order, twice.
        let turned = phase == 0 ? key : key << (8 * phase) | key >> (32 - 8 * phase)
        let word = UInt64(turned.bigEndian)
        let pattern = word | word << 32
        var index = start
        let end = start + count
        while end - index >= 8 {
            let masked = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            bytes.storeBytes(of: masked ^ pattern, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        // 8 is a multiple of the key's 4 bytes: the tail starts at the key's byte `phase` again.
        var keyIndex = phase
        while index < end {
            bytes[index] ^= UInt8(truncatingIfNeeded: key >> (24 - 8 * keyIndex))
            keyIndex = (keyIndex + 1) & 3
            index += 1
        }
    }
}
