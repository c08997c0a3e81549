// libFuzzer harness for RPCWire's WebSocket frame reading (WebSocketFrameScanner unmasking each read where it
// lies, then WebSocketFrameHead.cut), as rpcd's WebSocketFrameReceiver reads a client's stream, held to NIO's
// WebSocketFrameDecoder (behind ByteToMessageHandler in an EmbeddedChannel, payloads unmasked by NIO) as the
// reference.
//
// Input layout: byte 0 picks the maximum frame size (0...255, then 125 added as rpcd does, so "fits", "too
// long" and control frames are all short inputs); byte 1 seeds how the stream is cut into reads (1 to 16
// bytes each); the rest is the stream.
//
// Properties checked on every input: no trap or memory misuse; the same frames (first byte, mask key,
// unmasked payload) and the same refusal, after the same frames, however the stream is chunked.
import FuzzDriver
import NIOCore
import NIOEmbedded
import NIOWebSocket
import RPCWire

#if canImport(Glibc)
import Glibc
#endif

private struct Frame: Equatable {
    var firstByte: UInt8
    var maskKey: [UInt8]?
    var payload: [UInt8]
}

private enum Refusal: Equatable {
    case none, tooLong, fragmentedControlFrame, controlFrameTooLong
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzWebSocket(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let maxFrameSize = Int(input[0]) + 125
    var chunkSeed = UInt32(input[1]) &* 2_654_435_761 | 1
    let stream = Array(input[2...])
    var reads: [Int] = []
    var offset = 0
    while offset < stream.count {
        chunkSeed = chunkSeed &* 1_103_515_245 &+ 12_345
        offset = min(offset + Int(chunkSeed >> 16) % 16 + 1, stream.count)
        reads.append(offset)
    }

    let (rpcdFrames, rpcdRefusal) = rpcd(stream, reads: reads, maxFrameSize: maxFrameSize)
    let (nioFrames, nioRefusal) = nio(stream, reads: reads, maxFrameSize: maxFrameSize)
    precondition(rpcdRefusal == nioRefusal, "refusal: rpcd \(rpcdRefusal), NIO \(nioRefusal)")
    precondition(rpcdFrames == nioFrames, "frames differ: rpcd \(rpcdFrames.count), NIO \(nioFrames.count)")
    return 0
}

private func rpcd(_ stream: [UInt8], reads: [Int], maxFrameSize: Int) -> ([Frame], Refusal) {
    var scanner = WebSocketFrameScanner()
    var buffer = ByteBuffer()
    var frames: [Frame] = []
    var start = 0
    for end in reads {
        var read = ByteBuffer(bytes: stream[start..<end])
        read.withUnsafeMutableReadableBytes { scanner.scan(unmaskingIn: $0) }
        buffer.writeBuffer(&read)
        start = end
        while true {
            let cut: WebSocketFrameHead.Cut
            do {
                cut = try WebSocketFrameHead.cut(from: &buffer, maxFrameSize: maxFrameSize)
            } catch .tooLong {
                return (frames, .tooLong)
            } catch .fragmentedControlFrame {
                return (frames, .fragmentedControlFrame)
            } catch {
                return (frames, .controlFrameTooLong)
            }
            guard case .frame(let head, let frame) = cut else { break }
            let key = head.maskKey.map { key in withUnsafeBytes(of: key.bigEndian) { Array($0) } }
            frames.append(Frame(firstByte: head.firstByte, maskKey: key, payload: Array(head.payload(of: frame).readableBytesView)))
        }
    }
    return (frames, .none)
}

private func nio(_ stream: [UInt8], reads: [Int], maxFrameSize: Int) -> ([Frame], Refusal) {
    let channel = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameSize)))
    defer { _ = try? channel.finish() }
    var frames: [Frame] = []
    func drain() {
        while let frame = try! channel.readInbound(as: WebSocketFrame.self) {
            let key = frame.maskKey.map { [$0[0], $0[1], $0[2], $0[3]] }
            let first = (frame.fin ? 0x80 : 0) | (frame.rsv1 ? 0x40 : 0) | (frame.rsv2 ? 0x20 : 0) | (frame.rsv3 ? 0x10 : 0) as UInt8
            frames.append(Frame(
                firstByte: first | UInt8(webSocketOpcode: frame.opcode), maskKey: key,
                payload: Array(frame.unmaskedData.readableBytesView)))
        }
    }
    var start = 0
    for end in reads {
        do {
            try channel.writeInbound(ByteBuffer(bytes: stream[start..<end]))
        } catch let error as NIOWebSocketError {
            drain()
            switch error {
            case .invalidFrameLength: return (frames, .tooLong)
            case .fragmentedControlFrame: return (frames, .fragmentedControlFrame)
            case .multiByteControlFrameLength: return (frames, .controlFrameTooLong)
            }
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        drain()
        start = end
    }
    return (frames, .none)
}

exit(runFuzzer(fuzzWebSocket))
