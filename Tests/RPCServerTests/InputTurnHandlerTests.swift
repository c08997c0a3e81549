import NIOCore
import NIOEmbedded
@testable import RPCServer
import XCTest

/// A connection's input reaches NIO's parsers a turn at a time: a read that would keep the loop longer waits,
/// in part, for the next round, and nothing more is read meanwhile.
final class InputTurnHandlerTests: XCTestCase {
    /// Records what reaches the parser, advancing the injected clock a millisecond per slice.
    private final class Parser: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var received: [Int] = []
        var readsCompleted = 0
        let advance: () -> Void
        init(advance: @escaping () -> Void) { self.advance = advance }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received.append(unwrapInboundIn(data).readableBytes)
            advance()
        }
        func channelReadComplete(context: ChannelHandlerContext) { readsCompleted += 1 }
    }

    /// Counts the `read`s that pass towards the socket.
    private final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    func testAReadIsHandedOnInSlicesATurnAtATime() throws {
        var clock = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let parser = Parser { clock = clock + .milliseconds(1) }
        let counter = ReadCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(counter, InputTurnHandler(now: { clock }), parser)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()

        // 5 slices' worth in one read: two fit the turn (a millisecond each), the rest waits.
        try channel.writeInbound(ByteBuffer(repeating: 0x20, count: 4 * InputTurnHandler.slice + 100))
        XCTAssertEqual(parser.received, [InputTurnHandler.slice, InputTurnHandler.slice])
        XCTAssertEqual(parser.readsCompleted, 1, "what was handed on ends its burst")
        let reads = counter.reads
        channel.read()
        XCTAssertEqual(counter.reads, reads, "nothing more is read while input waits")

        channel.embeddedEventLoop.run()
        XCTAssertEqual(parser.received.count, 2, "the rest waits until the loop has polled")
        channel.embeddedEventLoop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(parser.received, [InputTurnHandler.slice, InputTurnHandler.slice, InputTurnHandler.slice, InputTurnHandler.slice])
        channel.embeddedEventLoop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(parser.received.last, 100)
        XCTAssertEqual(parser.received.reduce(0, +), 4 * InputTurnHandler.slice + 100, "every byte, in order")
        XCTAssertEqual(parser.readsCompleted, 3)
        XCTAssertEqual(counter.reads, reads + 1, "the read held back is passed on")
        _ = try channel.finish()
    }

    func testInputWaitingWhenThePeerClosesIsHandedOnFirst() throws {
        var clock = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let parser = Parser { clock = clock + .milliseconds(2) }
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(InputTurnHandler(now: { clock }), parser)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeInbound(ByteBuffer(repeating: 0x20, count: 3 * InputTurnHandler.slice))
        XCTAssertEqual(parser.received.count, 1)
        _ = try channel.finish()
        XCTAssertEqual(parser.received.reduce(0, +), 3 * InputTurnHandler.slice)
    }
}
