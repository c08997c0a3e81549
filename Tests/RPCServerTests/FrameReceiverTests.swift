import NIOCore
import NIOEmbedded
import RPCCore
import RPCProtocol
@testable import RPCServer
import RPCTestSupport
import RPCWire
import XCTest

/// `FrameReceiver` alone: frames as the wire format defines them however the stream is cut into reads, what
/// each frame holds of the budget, and input that arrives while frames are handed on. (The pipeline's limits
/// are `FrameLimitsTests`; the wire format's reading is fuzzed with the decoder, `fuzz/fuzz-frame`.)
final class FrameReceiverTests: XCTestCase {
    /// Random streams of frames, some longer than the maximum, each cut into reads of 1 to 40 bytes at
    /// random: the frames delivered, the refusal and the budget held are what a plain reading of the stream
    /// gives. Seeded, so a failure repeats.
    func testFramesAreTheSameHoweverTheStreamIsCut() throws {
        var random = SeededLCG(seed: 14)
        for round in 0..<300 {
            let maxFrameSize = 200
            let stream = random.frameStream(maxLength: 230)
            let expected = WireReading(stream, maxFrameSize: maxFrameSize)

            let account = PeerLedger.unlimitedAccount()
            let channel = EmbeddedChannel(handler: FrameReceiver(maxFrameSize: maxFrameSize, account: account, timeout: .seconds(60)))
            var frames: [[UInt8]] = []
            var refused = false
            var offset = 0
            while offset < stream.count, !refused {
                let length = min(Int(random.next() % 40) + 1, stream.count - offset)
                do {
                    try channel.writeInbound(channel.allocator.buffer(bytes: stream[offset..<(offset + length)]))
                } catch is FrameTooLargeError {
                    refused = true
                }
                offset += length
                while let frame = try channel.readInbound(as: ByteBuffer.self) { frames.append(Array(frame.readableBytesView)) }
            }
            XCTAssertEqual(frames, expected.frames, "round \(round)")
            XCTAssertEqual(refused, expected.tooLarge, "round \(round)")
            let delivered = frames.reduce(0) { $0 + $1.count }
            if refused {
                XCTAssertEqual(account.charged, delivered, "round \(round): a refusal gives back what the tail held")
            } else {
                // The tail is held in a buffer with room for twice what arrived (at least 1 KiB, at most the frame).
                XCTAssertGreaterThanOrEqual(account.charged, delivered + expected.tailLength, "round \(round)")
                XCTAssertLessThanOrEqual(
                    account.charged, delivered + max(1024, 2 * (expected.incompleteLength ?? 0) + 8), "round \(round)")
            }
            _ = try? channel.finish()
            XCTAssertEqual(account.charged, delivered, "round \(round): removal gives back what the incomplete frame held")
        }
    }

    /// A frame still arriving holds the memory of what arrived, not its announced length (issue 21); a whole
    /// frame holds its length once; a frame the account cannot cover is refused as its bytes come.
    func testAFrameStillArrivingIsChargedWhatArrived() throws {
        let ledger = PeerLedger(
            limits: ConnectionLimits {
                $0.maxFrameSize = 64
                $0.maxBufferedBytes = 1 << 20
                $0.maxBufferedBytesPerPeer = 40_000
            },
            administrators: RPCPeerSet([]), statistics: RPCStatistics())
        let account = try XCTUnwrap(ledger.open(.ip("192.0.2.1", port: 1)))
        let first = EmbeddedChannel(handler: FrameReceiver(maxFrameSize: 1 << 20, account: account, timeout: .seconds(60)))
        try first.writeInbound(first.allocator.buffer(bytes: [0, 0x01, 0, 0, 1, 2]))  // 65 536 announced
        XCTAssertEqual(account.charged, 1024, "a small buffer for what arrived")
        try first.writeInbound(first.allocator.buffer(bytes: Array(repeating: 7, count: 10_000)))
        XCTAssertGreaterThanOrEqual(account.charged, 10_002)
        XCTAssertLessThanOrEqual(account.charged, 20_008)
        XCTAssertThrowsError(try first.writeInbound(first.allocator.buffer(bytes: Array(repeating: 7, count: 30_000)))) { error in
            XCTAssertTrue(error is BufferBudgetExceeded, "\(error)")
        }
        XCTAssertEqual(account.charged, 0, "the refused frame gives back what it held")

        let second = EmbeddedChannel(handler: FrameReceiver(maxFrameSize: 1 << 20, account: account, timeout: .seconds(60)))
        try second.writeInbound(second.allocator.buffer(bytes: [0, 0, 3, 0x20, 1, 2]))  // 800 announced
        try second.writeInbound(second.allocator.buffer(bytes: Array(repeating: 7, count: 798)))
        XCTAssertEqual(try second.readInbound(as: ByteBuffer.self)?.readableBytes, 800)
        XCTAssertEqual(account.charged, 800, "the whole frame holds its length, once")
        _ = try? first.finish()
        _ = try? second.finish()
    }

    /// `FrameTimeout=` counts from each frame's length: a frame that starts in the read that completes the one
    /// before gets its own time, and a frame completed leaves no deadline.
    func testEachFrameHasItsOwnDeadline() throws {
        let channel = EmbeddedChannel(handler: FrameReceiver(maxFrameSize: 100, account: PeerLedger.unlimitedAccount(), timeout: .seconds(5)))
        var wire = ByteBuffer()
        wire.writeLengthPrefixedFrame("first frame")
        wire.writeLengthPrefixedFrame("second")
        try channel.writeInbound(wire.readSlice(length: 6)!)
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.writeInbound(wire.readSlice(length: 9 + 5)!)  // the rest of the first, the start of the second
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self).map { String(buffer: $0) }, "first frame")
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        XCTAssertNoThrow(try channel.throwIfErrorCaught(), "the second frame's time is its own")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertThrowsError(try channel.throwIfErrorCaught()) { XCTAssertTrue($0 is FrameTimedOut, "\($0)") }

        let completed = EmbeddedChannel(handler: FrameReceiver(maxFrameSize: 100, account: PeerLedger.unlimitedAccount(), timeout: .seconds(5)))
        try completed.writeInbound(ByteBuffer(bytes: WireFrame.bytes("whole").prefix(6)))
        try completed.writeInbound(ByteBuffer(bytes: WireFrame.bytes("whole").dropFirst(6)))
        completed.embeddedEventLoop.advanceTime(by: .seconds(60))
        XCTAssertNoThrow(try completed.throwIfErrorCaught())
        _ = try? channel.finish()
        _ = try? completed.finish()
    }

    /// Input that arrives while a frame is being handled (here: the next handler feeds the channel from inside
    /// `channelRead`) is read after the frames already there, in order.
    func testInputArrivingWhileFramesAreHandedOnKeepsItsOrder() throws {
        let channel = EmbeddedChannel()
        let feeder = Feeder()
        try channel.pipeline.syncOperations.addHandlers(
            FrameReceiver(maxFrameSize: 100, account: PeerLedger.unlimitedAccount(), timeout: .seconds(60)), feeder)
        var bytes = ByteBuffer()
        for payload in ["a", "b"] { bytes.writeLengthPrefixedFrame(payload) }
        bytes.writeBytes([0, 0])  // half of the next length
        feeder.more = [0, 1, UInt8(ascii: "c"), 0, 0, 0, 1, UInt8(ascii: "d")]
        try channel.writeInbound(bytes)
        XCTAssertEqual(feeder.received, ["a", "b", "c", "d"])
        _ = try? channel.finish()
    }
}

/// Passes on the frames it gets and, on the first, writes `more` into the pipeline's head.
private final class Feeder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var more: [UInt8] = []
    var received: [String] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received.append(String(buffer: unwrapInboundIn(data)))
        if !more.isEmpty {
            let bytes = context.channel.allocator.buffer(bytes: more)
            more = []
            context.pipeline.fireChannelRead(bytes)
        }
    }
}
