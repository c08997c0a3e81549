import NIOCore
import NIOWebSocket

/// The header of a frame rpcd sends on a WebSocket connection (RFC 6455 §5.2): a whole (FIN) unfragmented
/// frame, unmasked as a server's are, with its payload length in the fewest bytes that hold it (§5.2 asks
/// for the minimal form):
///
///      0                   1                   2                   3
///      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
///     +-+-+-+-+-------+-+-------------+-------------------------------+
///     |1|0|0|0|opcode |0|  len 0-125  |   payload ...                 |   2 bytes
///     |1|0|0|0|opcode |0|     126     |   len (16 bits)               |   4 bytes, 126 ... 65 535
///     |1|0|0|0|opcode |0|     127     |   len (64 bits) ...           |  10 bytes, above
///     +-+-+-+-+-------+-+-------------+-------------------------------+
///
/// rpcd writes these bytes itself rather than through NIO's `WebSocketFrameEncoder`, so that a frame's header
/// and payload go into one output buffer (`ChargedOutput`); the opcodes are NIO's `WebSocketOpcode`.
enum WebSocketFrameHeader {
    /// The most a header takes: two bytes and eight of extended length.
    static let maximumSize = 10

    /// Stores the header of a whole frame with `opcode` and a payload of `length` bytes at the start of `memory`,
    /// which has room for it (`size(payloadLength:)`); returns its size. A reply is serialized behind it in the
    /// same pass over the output buffer (`ChargedOutput`), as a length-prefixed frame's length is.
    static func store(_ opcode: WebSocketOpcode, payloadLength length: Int, into memory: UnsafeMutableRawBufferPointer) -> Int {
        memory[0] = 0x80 | UInt8(webSocketOpcode: opcode)
        switch length {
        case 0...125:
            memory[1] = UInt8(length)
            return 2
        case 126...Int(UInt16.max):
            memory[1] = 126
            memory.storeBytes(of: UInt16(length).bigEndian, toByteOffset: 2, as: UInt16.self)
            return 4
        default:
            memory[1] = 127
            memory.storeBytes(of: UInt64(length).bigEndian, toByteOffset: 2, as: UInt64.self)
            return 10
        }
    }

    /// How many bytes the header of a payload of `length` bytes takes.
    static func size(payloadLength length: Int) -> Int {
        switch length {
        case 0...125: 2
        case 126...Int(UInt16.max): 4
        default: 10
        }
    }
}

extension ByteBuffer {
    /// Appends the header of a whole frame with `opcode` and a payload of `length` bytes
    /// (`WebSocketFrameHeader`); the payload is the caller's to append.
    mutating func writeWebSocketFrameHeader(_ opcode: WebSocketOpcode, payloadLength length: Int) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: WebSocketFrameHeader.maximumSize) {
            WebSocketFrameHeader.store(opcode, payloadLength: length, into: $0)
        }
    }

    /// Appends a whole frame: its header and `payload`.
    mutating func writeWebSocketFrame(_ opcode: WebSocketOpcode, _ payload: ByteBuffer) {
        writeWebSocketFrameHeader(opcode, payloadLength: payload.readableBytes)
        writeImmutableBuffer(payload)
    }
}
