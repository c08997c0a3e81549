import NIOCore
import NIOEmbedded
import RPCModuleLink
import RPCTestSupport
import RPCWire
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The link's I/O: a burst of messages leaves as one buffer at its flush (and nothing is held past it), a large
/// params or result is neither copied on the way out nor re-copied as it arrives in pieces, and frames whole
/// in a read are handed on as slices of it.
final class ModuleLinkBurstTests: XCTestCase {
    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers())
        return channel
    }

    private func decode(_ buffers: [ByteBuffer]) throws -> [ModuleLinkMessage] {
        let reader = try channel()
        for buffer in buffers { try reader.writeInbound(buffer) }
        var messages: [ModuleLinkMessage] = []
        while let burst = try reader.readInbound(as: [ModuleLinkMessage].self) { messages += burst }
        XCTAssertTrue(try reader.finish().isClean)
        return messages
    }

    private func outbound(_ channel: EmbeddedChannel) throws -> [ByteBuffer] {
        var buffers: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { buffers.append(buffer) }
        return buffers
    }

    func testABurstOfMessagesIsOneBufferWrittenAtItsFlush() throws {
        let channel = try channel()
        let burst = (1...50).map { ModuleLinkMessage.result(token: UInt64($0), json: ByteBuffer(string: "\($0)")) }
            + [.cancel(token: 7), .pong(3)]
        var promises: [EventLoopFuture<Void>] = []
        for message in burst {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            channel.write([message], promise: promise)
            promises.append(promise.futureResult)
        }
        XCTAssertEqual(try outbound(channel).count, 0, "held until the flush")
        channel.flush()
        let written = try outbound(channel)
        XCTAssertEqual(written.count, 1, "one buffer for the whole burst")
        XCTAssertEqual(try decode(written), burst)
        for promise in promises { XCTAssertNoThrow(try promise.wait()) }

        // Nothing is kept back at the end of a burst: a lone message goes out whole at its own flush.
        try channel.writeAndFlush([ModuleLinkMessage.ping(9)]).wait()
        XCTAssertEqual(try decode(try outbound(channel)), [.ping(9)])
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testALargeTailIsWrittenAsItIsBetweenTheBurstsBuffers() throws {
        let channel = try channel()
        let large = ByteBuffer(repeating: UInt8(ascii: "x"), count: ModuleLinkCodec.copyLimit)
        let burst: [ModuleLinkMessage] = [.result(token: 1, json: ByteBuffer(string: "1")), .result(token: 2, json: large), .cancel(token: 3)]
        channel.writeAndFlush(burst, promise: nil)
        let written = try outbound(channel)
        XCTAssertEqual(written.count, 3, "the frames before the large tail and its head, the tail, the frames after")
        XCTAssertEqual(
            written[1].withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) },
            large.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }, "the tail is not copied")
        XCTAssertEqual(try decode(written), burst)
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testFramesWholeInAReadAreSlicesOfIt() throws {
        let receiver = EmbeddedChannel(handler: ModuleLinkFrameReceiver(maxFrameSize: 1 << 20))
        var read = ByteBuffer()
        read.writeLengthPrefixedFrame("first")
        read.writeLengthPrefixedFrame("second")
        let base = read.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        try receiver.writeInbound(read)
        let first = try XCTUnwrap(receiver.readInbound(as: ByteBuffer.self))
        let second = try XCTUnwrap(receiver.readInbound(as: ByteBuffer.self))
        XCTAssertEqual(String(buffer: first), "first")
        XCTAssertEqual(String(buffer: second), "second")
        XCTAssertEqual(first.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }, base + 4)
        XCTAssertEqual(second.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }, base + 13)
        XCTAssertTrue(try receiver.finish().isClean)
    }

    /// 1 MiB in 64 KiB reads, as the socket brings it, with the length itself split across reads and more
    /// frames behind it in the last read; and a frame above the size allocated whole, which grows.
    func testLargeFramesArrivingInPiecesArriveWhole() throws {
        for size in [1 << 20, ModuleLinkFrameReceiver.wholeAllocationLimit + 12_345] {
            var bytes = [UInt8](repeating: UInt8(ascii: "x"), count: size)
            bytes.withUnsafeMutableBufferPointer { bytes in
                for index in stride(from: 0, to: size, by: 997) { bytes[index] = UInt8(truncatingIfNeeded: index) }
            }
            let payload = ByteBuffer(bytes: bytes)
            var wire = ByteBuffer()
            wire.writeLengthPrefixedFrame("before")
            wire.writeLengthPrefixedFrame(payload)
            wire.writeLengthPrefixedFrame("after")
            wire.writeLengthPrefixedFrame("")
            let receiver = EmbeddedChannel(handler: ModuleLinkFrameReceiver(maxFrameSize: 1 << 30))
            // The first read ends two bytes into the large frame's length; the rest comes 64 KiB at a time.
            var pieces = [wire.readSlice(length: 4 + 6 + 2)!]
            while wire.readableBytes > 0 { pieces.append(wire.readSlice(length: min(65_536, wire.readableBytes))!) }
            for piece in pieces { try receiver.writeInbound(piece) }
            var frames: [ByteBuffer] = []
            while let frame = try receiver.readInbound(as: ByteBuffer.self) { frames.append(frame) }
            XCTAssertEqual(frames.map(\.readableBytes), [6, size, 5, 0])
            XCTAssertTrue(frames[1].withUnsafeReadableBytes { received in
                payload.withUnsafeReadableBytes { sent in memcmp(received.baseAddress!, sent.baseAddress!, size) == 0 }
            })
            XCTAssertEqual(String(buffer: frames[2]), "after")
            XCTAssertTrue(try receiver.finish().isClean)
        }
    }

    /// Given the link's socket, the receiver reads a large frame's rest from it straight into the frame's
    /// buffer once the channel's read brought its start, and not a byte after the frame: what follows stays in
    /// the socket for the channel's next read. Inactive (closed), it reads nothing from the descriptor.
    func testTheRestOfALargeFrameIsReadFromTheSocket() throws {
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends), 0)
        defer { for end in ends { close(end) } }
        XCTAssertEqual(fcntl(ends[0], F_SETFL, O_NONBLOCK), 0)
        let payload = ByteBuffer(bytes: (0..<100_000).map { UInt8(truncatingIfNeeded: $0 / 7) })
        var wire = ByteBuffer()
        wire.writeLengthPrefixedFrame(payload)
        wire.writeLengthPrefixedFrame("after")
        let start = wire.readSlice(length: 1000)!
        let rest = wire.readableBytes
        XCTAssertEqual(wire.withUnsafeReadableBytes { write(ends[1], $0.baseAddress, $0.count) }, rest)

        let inactive = EmbeddedChannel(handler: ModuleLinkFrameReceiver(maxFrameSize: 1 << 20, descriptor: ends[0]))
        try inactive.writeInbound(start)
        XCTAssertNil(try inactive.readInbound(as: ByteBuffer.self), "nothing read from the socket")
        _ = try? inactive.finish()

        let receiver = EmbeddedChannel(handler: ModuleLinkFrameReceiver(maxFrameSize: 1 << 20, descriptor: ends[0]))
        try receiver.connect(to: SocketAddress(unixDomainSocketPath: "/link")).wait()
        try receiver.writeInbound(start)
        XCTAssertEqual(try receiver.readInbound(as: ByteBuffer.self), payload)
        XCTAssertNil(try receiver.readInbound(as: ByteBuffer.self))
        var after = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(read(ends[0], &after, after.count), 9, "the next frame is left in the socket")
        XCTAssertEqual(Array(after[4..<9]), Array("after".utf8))
        XCTAssertTrue(try receiver.finish().isClean)
    }

    func testAFrameAboveTheLimitIsRefusedAsItsLengthArrives() throws {
        let receiver = EmbeddedChannel(handler: ModuleLinkFrameReceiver(maxFrameSize: 1000))
        var read = ByteBuffer()
        read.writeLengthPrefixedFrame("ok")
        read.writeInteger(UInt32(1001))
        XCTAssertThrowsError(try receiver.writeInbound(read)) { error in
            XCTAssertEqual(error as? FrameTooLargeError, FrameTooLargeError(announcedLength: 1001, maxFrameSize: 1000))
        }
        XCTAssertEqual(try receiver.readInbound(as: ByteBuffer.self).map { String(buffer: $0) }, "ok")
        // Whatever follows is dropped: the link is closed by its end's handler.
        try receiver.writeInbound(ByteBuffer(bytes: WireFrame.bytes("late")))
        XCTAssertNil(try receiver.readInbound(as: ByteBuffer.self))
        _ = try? receiver.finish()
    }
}
