// libFuzzer harness for RPCWire's LengthPrefixedFrameDecoder (the frame cutter, `LengthPrefixedFrameCutter`,
// behind a ByteToMessageDecoder), driven through ByteToMessageHandler in an EmbeddedChannel exactly as the
// client's pipeline uses it.
//
// Input layout: byte 0 picks the maximum frame size (0...255, so both "fits" and "too large" are short
// inputs); byte 1 seeds how the stream is cut into reads (1 to 16 bytes each); the rest is the stream.
//
// Properties checked on every input: no trap or memory misuse; the frames delivered, and whether and when
// FrameTooLargeError is raised, are exactly what a straightforward reading of the wire format gives, however
// the stream is chunked; at EOF nothing more is delivered and the channel finishes cleanly.
import FuzzDriver
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOEmbedded
import RPCWire

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzFrame(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let maxFrameSize = Int(input[0])
    var chunkSeed = UInt32(input[1]) &* 2_654_435_761 | 1
    let stream = Array(input[2...])

    let (expectedFrames, expectTooLarge) = reference(stream, maxFrameSize: maxFrameSize)

    let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: maxFrameSize)))
    var frames: [[UInt8]] = []
    var tooLarge = false
    func drain() {
        while let frame = try! channel.readInbound(as: ByteBuffer.self) {
            frames.append(Array(frame.readableBytesView))
        }
    }
    var offset = 0
    while offset < stream.count && !tooLarge {
        chunkSeed = chunkSeed &* 1_103_515_245 &+ 12_345
        let length = min(Int(chunkSeed >> 16) % 16 + 1, stream.count - offset)
        var chunk = channel.allocator.buffer(capacity: length)
        chunk.writeBytes(stream[offset..<(offset + length)])
        offset += length
        do {
            try channel.writeInbound(chunk)
        } catch is FrameTooLargeError {
            tooLarge = true
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        drain()
    }
    precondition(tooLarge == expectTooLarge, "FrameTooLargeError: got \(tooLarge), expected \(expectTooLarge)")
    precondition(frames == expectedFrames, "frames differ: got \(frames.count), expected \(expectedFrames.count)")

    if !tooLarge {
        // EOF: decodeLast may deliver nothing new (every complete frame was delivered as it arrived).
        _ = try? channel.finish()
        drain()
        precondition(frames == expectedFrames, "decodeLast delivered more frames")
    } else {
        _ = try? channel.finish()
    }
    return 0
}

/// The frames in `stream`, and whether a too-large length is announced before the stream ends.
private func reference(_ stream: [UInt8], maxFrameSize: Int) -> (frames: [[UInt8]], tooLarge: Bool) {
    var frames: [[UInt8]] = []
    var position = 0
    while stream.count - position >= 4 {
        let length = stream[position..<(position + 4)].reduce(0) { $0 << 8 | Int($1) }
        if length > maxFrameSize { return (frames, true) }
        guard stream.count - position - 4 >= length else { break }
        frames.append(Array(stream[(position + 4)..<(position + 4 + length)]))
        position += 4 + length
    }
    return (frames, false)
}

exit(runFuzzer(fuzzFrame))
