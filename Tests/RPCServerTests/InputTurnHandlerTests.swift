import NIOCore
import NIOEmbedded
import RPCCore
@testable import RPCServer
import XCTest

/// A connection's input reaches NIO's parsers a slice at a time, as they ask for it, and a turn of the loop at
/// a time; nothing more is read from the socket while input waits.
final class InputTurnHandlerTests: XCTestCase {
    /// Stands for the parsers behind: records what reaches it, advances the injected clock per slice, and holds
    /// `read`s while `busy` (as NIO's pipelining handler does while a response is pending).
    private final class Parser: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundIn = Never
        var received: [Int] = []
        var readsCompleted = 0
        var busy = false
        var readHeld = false
        let advance: () -> Void
        init(advance: @escaping () -> Void) { self.advance = advance }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received.append(unwrapInboundIn(data).readableBytes)
            advance()
        }
        func channelReadComplete(context: ChannelHandlerContext) { readsCompleted += 1 }
        func read(context: ChannelHandlerContext) {
            if busy { readHeld = true } else { context.read() }
        }
        func release(context: ChannelHandlerContext) {
            busy = false
            if readHeld {
                readHeld = false
                context.read()
            }
        }
    }

    /// Counts the `read`s that reach the socket.
    private final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    private var clock = NIODeadline.uptimeNanoseconds(1_000_000_000)

    private func makeChannel(costPerSlice: TimeAmount) throws -> (EmbeddedChannel, Parser, ReadCounter) {
        let parser = Parser { [unowned self] in clock = clock + costPerSlice }
        let counter = ReadCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(counter, InputTurnHandler(), parser)
        RPCLoopTurns.of(channel.eventLoop).now = { [unowned self] in clock }
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, parser, counter)
    }

    func testAReadIsHandedOnInSlicesATurnAtATime() throws {
        let (channel, parser, counter) = try makeChannel(costPerSlice: .milliseconds(1))
        let slice = InputTurnHandler.slice

        // 5 slices' worth in one read: two fit the turn (a millisecond each), the rest waits.
        try channel.writeInbound(ByteBuffer(repeating: 0x20, count: 4 * slice + 100))
        XCTAssertEqual(parser.received, [slice, slice])
        XCTAssertEqual(parser.readsCompleted, 2, "each slice ends a burst of its own")
        let reads = counter.reads
        channel.read()
        XCTAssertEqual(counter.reads, reads, "the socket is not read while input waits")

        channel.embeddedEventLoop.run()
        XCTAssertEqual(parser.received.count, 2, "the rest waits until the loop has polled")
        channel.embeddedEventLoop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(parser.received, [slice, slice, slice, slice])
        channel.embeddedEventLoop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(parser.received.reduce(0, +), 4 * slice + 100, "every byte, in order")
        XCTAssertEqual(parser.received.last, 100)
        XCTAssertGreaterThan(counter.reads, reads, "once all is handed on, the socket is read again")
        _ = try channel.finish()
    }

    func testNothingMoreIsHandedOnWhileTheHandlersBehindHoldTheirRead() throws {
        let (channel, parser, counter) = try makeChannel(costPerSlice: .microseconds(1))
        let slice = InputTurnHandler.slice
        parser.busy = true  // a response is pending: what was read waits here, not parsed and queued behind
        try channel.writeInbound(ByteBuffer(repeating: 0x20, count: 3 * slice))
        XCTAssertEqual(parser.received, [slice])
        let reads = counter.reads
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))
        XCTAssertEqual(parser.received, [slice], "held reads hold the input")
        XCTAssertEqual(counter.reads, reads)

        parser.release(context: try channel.pipeline.syncOperations.context(handler: parser))
        XCTAssertEqual(parser.received, [slice, slice, slice], "released, the rest within the turn")
        XCTAssertGreaterThan(counter.reads, reads)
        _ = try channel.finish()
    }

    func testInputWaitingWhenThePeerClosesIsHandedOnFirst() throws {
        let (channel, parser, _) = try makeChannel(costPerSlice: .milliseconds(2))
        try channel.writeInbound(ByteBuffer(repeating: 0x20, count: 3 * InputTurnHandler.slice))
        XCTAssertEqual(parser.received.count, 1)
        _ = try channel.finish()
        XCTAssertEqual(parser.received.reduce(0, +), 3 * InputTurnHandler.slice)
    }
}
