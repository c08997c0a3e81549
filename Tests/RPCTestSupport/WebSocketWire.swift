package import NIOCore

/// WebSocket frames (RFC 6455 §5.2) as the tests write and read them by hand: a client's, masked, and the
/// server's, read back from what a channel wrote. Written here, not with rpcd's own header writer, so that a
/// mistake there cannot hide in both.
package enum WebSocketWire {
    /// One frame of the server's, as read.
    package struct Frame: Equatable, CustomStringConvertible {
        package var fin = true
        package var opcode: UInt8
        package var payload: [UInt8]

        package init(opcode: UInt8, payload: String) {
            self.init(opcode: opcode, bytes: Array(payload.utf8))
        }

        package init(opcode: UInt8, bytes: [UInt8], fin: Bool = true) {
            self.fin = fin
            self.opcode = opcode
            self.payload = bytes
        }

        package var description: String {
            "Frame(opcode \(opcode)\(fin ? "" : ", not final"), \(payload.count) bytes: \(String(decoding: payload.prefix(80), as: UTF8.self)))"
        }
    }

    package static let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    /// A client's frame: masked with `mask`, its length in the shortest form.
    package static func clientFrame(opcode: UInt8, fin: Bool = true, _ text: String) -> ByteBuffer {
        clientFrame(opcode: opcode, fin: fin, bytes: Array(text.utf8))
    }

    package static func clientFrame(opcode: UInt8, fin: Bool = true, bytes payload: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger((fin ? 0x80 : 0) | opcode)
        buffer.writeBytes(lengthBytes(payload.count, masked: true))
        buffer.writeBytes(mask)
        buffer.writeBytes(payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
        return buffer
    }

    /// The second byte of a header and the extended length: 7 bits, 126 and 16 bits, or 127 and 64 bits.
    package static func lengthBytes(_ length: Int, masked: Bool = false) -> [UInt8] {
        let maskBit: UInt8 = masked ? 0x80 : 0
        switch length {
        case 0..<126: return [maskBit | UInt8(length)]
        case 126...0xFFFF: return [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        default: return [maskBit | 127] + (0..<8).reversed().map { UInt8((length >> ($0 * 8)) & 0xFF) }
        }
    }

    /// The server's frames in `bytes`, which must hold whole unmasked frames only.
    package static func serverFrames(in bytes: inout ByteBuffer) -> [Frame] {
        var frames: [Frame] = []
        while let first = bytes.readInteger(as: UInt8.self), let second = bytes.readInteger(as: UInt8.self) {
            precondition(second & 0x80 == 0, "a server's frames are not masked")
            var length = Int(second & 0x7F)
            if length == 126 { length = Int(bytes.readInteger(as: UInt16.self)!) }
            if length == 127 { length = Int(bytes.readInteger(as: UInt64.self)!) }
            frames.append(Frame(opcode: first & 0x0F, bytes: bytes.readBytes(length: length)!, fin: first & 0x80 != 0))
        }
        return frames
    }
}
