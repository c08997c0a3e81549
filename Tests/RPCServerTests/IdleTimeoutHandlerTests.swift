import NIOCore
import NIOEmbedded
@testable import RPCServer
import XCTest

/// `IdleTimeoutHandler` on an `EmbeddedChannel`, whose loop's clock the test moves.
final class IdleTimeoutHandlerTests: XCTestCase {
    private var channel: EmbeddedChannel!
    private var idleEvents: IdleEventCounter!

    override func setUpWithError() throws {
        idleEvents = IdleEventCounter()
        channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(IdleTimeoutHandler(timeout: .seconds(10)), idleEvents)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    }

    override func tearDown() {
        _ = try? channel.finish()
    }

    func testSilenceIsReportedAfterTheTimeoutAndAgainWhileItLasts() {
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        XCTAssertEqual(idleEvents.count, 0)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertEqual(idleEvents.count, 1)
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        XCTAssertEqual(idleEvents.count, 2)
    }

    func testTrafficEitherWayStartsTheClockAgain() throws {
        channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        try channel.writeInbound(ByteBuffer(string: "in"))  // a read burst
        channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        try channel.writeOutbound(ByteBuffer(string: "out"))  // a flush
        channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        XCTAssertEqual(idleEvents.count, 0, "never 10 s without traffic")
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        XCTAssertEqual(idleEvents.count, 1)
    }
}

private final class IdleEventCounter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var count = 0

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ConnectionIdleEvent { count += 1 }
    }
}
