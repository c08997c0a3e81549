import NIOCore
import NIOEmbedded
import NIOWebSocket
import RPCTestSupport
import RPCWire
import XCTest

/// `WebSocketFrameHead.cut` after `WebSocketFrameScanner` reads a client's stream as NIO's
/// `WebSocketFrameDecoder` does: the same frames, unmasked, and the same refusals at the same byte, however
/// the stream is cut into reads. NIO's decoder is the reference (fuzz-websocket holds the two to it on
/// arbitrary bytes).
final class WebSocketFrameHeadTests: XCTestCase {
    /// A frame as both readings give it.
    private struct Frame: Equatable {
        var firstByte: UInt8
        var maskKey: [UInt8]?
        var payload: [UInt8]
    }

    private enum Outcome: Equatable {
        case frames([Frame])
        case refused([Frame], WebSocketFrameError)
    }

    /// rpcd's reading: each read unmasked where it lies, then cut.
    private func rpcd(_ stream: [UInt8], reads: [Int], maxFrameSize: Int) -> Outcome {
        var scanner = WebSocketFrameScanner()
        var buffer = ByteBuffer()
        var frames: [Frame] = []
        var start = 0
        for end in reads + [stream.count] where end > start {
            var read = ByteBuffer(bytes: stream[start..<end])
            read.withUnsafeMutableReadableBytes { scanner.scan(unmaskingIn: $0) }
            buffer.writeBuffer(&read)
            start = end
            while true {
                do {
                    guard case .frame(let head, let frame) = try WebSocketFrameHead.cut(from: &buffer, maxFrameSize: maxFrameSize)
                    else { break }
                    let key = head.maskKey.map { key in withUnsafeBytes(of: key.bigEndian) { Array($0) } }
                    frames.append(Frame(firstByte: head.firstByte, maskKey: key, payload: Array(head.payload(of: frame).readableBytesView)))
                } catch {
                    return .refused(frames, error)
                }
            }
        }
        return .frames(frames)
    }

    /// NIO's reading: `WebSocketFrameDecoder` behind `ByteToMessageHandler`, payloads unmasked by NIO.
    private func nio(_ stream: [UInt8], reads: [Int], maxFrameSize: Int) -> Outcome {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameSize)))
        defer { _ = try? channel.finish() }
        var frames: [Frame] = []
        func drain() {
            while let frame = try? channel.readInbound(as: WebSocketFrame.self) {
                let key = frame.maskKey.map { [$0[0], $0[1], $0[2], $0[3]] }
                let first = frame.fin ? 0x80 : 0 as UInt8
                let rsv = (frame.rsv1 ? 0x40 : 0) | (frame.rsv2 ? 0x20 : 0) | (frame.rsv3 ? 0x10 : 0) as UInt8
                frames.append(Frame(
                    firstByte: first | rsv | UInt8(webSocketOpcode: frame.opcode), maskKey: key,
                    payload: Array(frame.unmaskedData.readableBytesView)))
            }
        }
        var start = 0
        for end in reads + [stream.count] where end > start {
            do {
                try channel.writeInbound(ByteBuffer(bytes: stream[start..<end]))
            } catch let error as NIOWebSocketError {
                drain()
                switch error {
                case .invalidFrameLength: return .refused(frames, .tooLong)
                case .fragmentedControlFrame: return .refused(frames, .fragmentedControlFrame)
                case .multiByteControlFrameLength: return .refused(frames, .controlFrameTooLong)
                }
            } catch {
                XCTFail("unexpected \(error)")
            }
            drain()
            start = end
        }
        return .frames(frames)
    }

    private func frame(_ first: UInt8, _ payload: [UInt8], masked: Bool = true, length: [UInt8]? = nil) -> [UInt8] {
        let mask = WebSocketWire.mask
        let wire = masked ? payload.enumerated().map { $0.element ^ mask[$0.offset % 4] } : payload
        return [first] + (length ?? WebSocketWire.lengthBytes(payload.count, masked: masked)) + (masked ? mask : []) + wire
    }

    private func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) } }

    /// `stream` read in one piece, byte by byte, and in reads of 2 to 11 bytes: rpcd's reading is NIO's.
    private func assertSameAsNIO(_ stream: [UInt8], maxFrameSize: Int = 1 << 16, _ expected: Outcome? = nil, line: UInt = #line) {
        var cuts: [[Int]] = [[], Array(1..<max(1, stream.count))]
        for size in 2...11 { cuts.append(Array(stride(from: size, to: stream.count, by: size))) }
        for reads in cuts {
            let nio = nio(stream, reads: reads, maxFrameSize: maxFrameSize)
            XCTAssertEqual(rpcd(stream, reads: reads, maxFrameSize: maxFrameSize), nio, "reads ending at \(reads.prefix(8))…", line: line)
            if let expected { XCTAssertEqual(nio, expected, line: line) }
        }
    }

    func testFramesOfEveryLengthFormOpcodeAndFlag() {
        var stream: [UInt8] = []
        for (first, count) in [(0x81, 0), (0x81, 5), (0x01, 125), (0x80, 126), (0x82, 300), (0x89, 125), (0x8A, 0),
                               (0xF1, 7), (0x88, 2), (0x83, 70_000), (0x8B, 3)] as [(UInt8, Int)] {
            stream += frame(first, bytes(count))
        }
        stream += frame(0x81, bytes(9), masked: false)  // the frame layer takes it; the message handler refuses it
        stream += frame(0x81, bytes(3), length: [0x80 | 126, 0, 3])  // a long form for a short length
        assertSameAsNIO(stream, maxFrameSize: 1 << 17)
    }

    func testTooLongIsRefusedByItsLength() {
        let ok = frame(0x81, bytes(10))
        assertSameAsNIO(ok + frame(0x81, bytes(101)), maxFrameSize: 100, .refused([Frame(firstByte: 0x81, maskKey: WebSocketWire.mask, payload: bytes(10))], .tooLong))
        // Refused before the mask key or any payload arrives.
        assertSameAsNIO(ok + [0x81, 0x80 | 127, 0, 0, 0, 0, 0, 1, 0, 0], maxFrameSize: 100)
        assertSameAsNIO([0x82, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 0], maxFrameSize: 100, .refused([], .tooLong))  // past Int.max
    }

    func testControlFramesFragmentedOrLongAreRefused() {
        assertSameAsNIO(frame(0x09, bytes(3)), .refused([], .fragmentedControlFrame))
        assertSameAsNIO(frame(0x88, bytes(126)), .refused([], .controlFrameTooLong))
        assertSameAsNIO(frame(0x81, bytes(4)) + frame(0x0A, [], masked: false))
    }
}
