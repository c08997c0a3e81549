import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCJSON
import RPCLogging
import RPCProtocol
@testable import RPCServer
import RPCBinding
import RPCTestSupport
import RPCWire
import Synchronization
import XCTest

/// What the connection handler charges the peer's account (issue 21): replies until the socket takes them, a
/// peer that takes none of them, and turns on the loop. Each connection is the server's own pipeline on an
/// `EmbeddedChannel`, behind `HeldWrites`, which plays a socket whose peer reads only when told.
final class PeerShareTests: XCTestCase {
    private var channel: EmbeddedChannel!
    private var socket: HeldWrites!
    private var ledger: PeerLedger!

    private func makeChannel(perPeer: Int = 64 << 10, frameTimeout: Duration = .seconds(60)) throws {
        let router = RPCRouter(
            registry: try RPCServiceRegistry(services: [SleepEchoService(), LargeReplies()]), parser: RPCEnvelopeParser())
        let limits = ConnectionLimits {
            $0.maxFrameSize = 16 << 10
            $0.maxBufferedBytesPerPeer = perPeer
            $0.frameTimeout = frameTimeout
            $0.idleTimeout = nil
        }
        ledger = PeerLedger(limits: limits, administrators: RPCPeerSet([]), statistics: router.statistics)
        socket = HeldWrites()
        channel = try PipelineChannel.make(
            configuration: RPCServer.Configuration(listen: [], limits: limits), router: router, ledger: ledger, first: socket)
    }

    override func tearDown() {
        _ = try? channel?.finish()
    }

    private func echo(_ id: Int, bytes: Int) -> ByteBuffer {
        ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.echo","params":["\#(String(repeating: "x", count: bytes))"],"id":\#(id)}"#)
    }

    /// Replies wait in the account until the socket takes them; taken, they are given back.
    func testRepliesAreChargedUntilTheSocketTakesThem() throws {
        try makeChannel()
        try channel.writeInbound(echo(1, bytes: 5000))
        XCTAssertGreaterThan(ledger.charged, 5000, "the reply, not yet taken")
        socket.peerReads()
        XCTAssertEqual(ledger.charged, 0)
        XCTAssertEqual(try PipelineChannel.writtenFrames(channel).count, 1)
    }

    /// A peer that sends small calls with large replies and never reads them is closed once they fill its
    /// share, instead of making rpcd hold them without bound (issue 21: +130 MiB per connection); what they
    /// held is given back.
    func testRepliesAPeerLeavesUnreadCannotPassItsShare() throws {
        try makeChannel(perPeer: 64 << 10)
        var input = ByteBuffer()
        for id in 1...20 {
            var frame = ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"large.get","params":[10000],"id":\#(id)}"#)
            input.writeBuffer(&frame)
        }
        try channel.writeInbound(input)
        XCTAssertFalse(channel.isActive, "closed when its replies passed 64 KiB")
        XCTAssertLessThanOrEqual(socket.heldBytes, 64 << 10)
        channel.embeddedEventLoop.run()
        XCTAssertEqual(ledger.charged, 0, "nothing stays charged after the close")
    }

    /// Frames wait behind replies the peer does not take; past `FrameTimeout=` the connection is closed, so
    /// that such frames cannot hold their bytes forever.
    func testAPeerThatTakesNothingIsClosedAfterTheFrameTimeout() throws {
        try makeChannel(frameTimeout: .seconds(30))
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        try channel.writeInbound(echo(1, bytes: 100))
        XCTAssertGreaterThan(ledger.charged, 0, "the waiting frame is charged")
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        XCTAssertTrue(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertFalse(channel.isActive)
        channel.embeddedEventLoop.run()
        XCTAssertEqual(ledger.charged, 0)
    }

    /// A small call that arrived in a large read keeps bytes of its own, not the read: otherwise each call in
    /// flight could keep 64 KiB alive while charged for a few bytes.
    func testASmallCallInALargeReadDoesNotKeepTheRead() throws {
        try makeChannel()
        var read = channel.allocator.buffer(capacity: 64 << 10)
        read.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"large.keep","params":[1],"id":1}"#)
        read.writeBytes(WireFrame.header(announcing: 60_000))  // a large frame begins in the same read
        read.writeBytes(Array(repeating: UInt8(ascii: " "), count: 20_000))
        try channel.writeInbound(read)
        XCTAssertLessThan(LargeReplies.keptStorage.withLock { $0 }, 1024, "the params the call keeps")
    }

    /// A peer that reads again in time is not closed.
    func testAPeerThatReadsAgainInTimeStaysConnected() throws {
        try makeChannel(frameTimeout: .seconds(30))
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        XCTAssertTrue(channel.isActive)
    }
}

/// `large.get N` answers a string of N bytes: small calls, large replies.
private struct LargeReplies: RPCService {
    let descriptor = RPCServiceDescriptor(
        name: "large", version: "0", summary: "Test fixture: large replies", methods: [RPCMethodDescriptor(name: "get"), RPCMethodDescriptor(name: "keep")])

    /// The storage `large.keep` found its params in.
    static let keptStorage = Mutex(0)

    func handle(_ call: RPCCall, responder: RPCResponder) {
        if call.method.name == "keep" {
            Self.keptStorage.withLock { $0 = call.params?.storageCapacity ?? 0 }
            return responder.succeed(rawJSON: ByteBuffer(string: "true"))
        }
        let size = (try? call.paramsValue())?[0]?.intValue ?? 0
        responder.succeed(rawJSON: ByteBuffer(string: "\"" + String(repeating: "x", count: size) + "\""))
    }
}

/// Plays the socket: holds what is written (and its promises) until `peerReads()`, as a peer that does not read
/// leaves replies in the outbound buffer.
final class HeldWrites: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private var held: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var context: ChannelHandlerContext?

    var heldBytes: Int { held.reduce(0) { $0 + $1.0.readableBytes } }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        held.append((unwrapOutboundIn(data), promise))
    }

    func flush(context: ChannelHandlerContext) {}

    /// The peer reads everything written so far.
    func peerReads() {
        guard let context else { return }
        let taken = held
        held = []
        for (buffer, promise) in taken { context.write(NIOAny(buffer), promise: promise) }
        context.flush()
    }
}
