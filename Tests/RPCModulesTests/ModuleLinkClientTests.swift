import NIOCore
import NIOEmbedded
import RPCCore
import RPCModuleLink
@testable import RPCModules
import XCTest

/// rpcd's end of a link takes turns on its loop: what a host's messages cost (an event fanned out to every
/// subscriber) keeps the loop at most a turn before the other connections' input is served.
final class ModuleLinkClientTests: XCTestCase {
    /// Counts the `read`s that pass the link client towards the socket.
    private final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    func testMessagesPastATurnWaitForTheNextRoundAndTheLinkIsNotReadMeanwhile() throws {
        let channel = EmbeddedChannel()
        // Each message costs a millisecond of the injected clock.
        var clock = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var handled: [UInt64] = []
        var closed = false
        let client = ModuleLinkClient(
            receive: { message, _ in
                guard case .pong(let sequence) = message else { return XCTFail("\(message)") }
                handled.append(sequence)
                clock = clock + .milliseconds(1)
            },
            closed: { closed = true }, now: { clock })
        let counter = ReadCounter()
        try channel.pipeline.syncOperations.addHandlers(counter, client)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()

        // One read of the link carrying six messages: two fit the turn, the rest wait.
        channel.pipeline.fireChannelRead((1...6).map { ModuleLinkMessage.pong(UInt64($0)) })
        channel.pipeline.fireChannelReadComplete()
        XCTAssertEqual(handled, [1, 2])
        let readsBefore = counter.reads
        channel.read()
        XCTAssertEqual(counter.reads, readsBefore, "nothing more is read from the link while messages wait")

        // Each round is scheduled a pause after the last: the loop polls its sockets first.
        channel.embeddedEventLoop.run()
        XCTAssertEqual(handled, [1, 2], "no task of the link's is ready before the loop polls")
        channel.embeddedEventLoop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(handled, [1, 2, 3, 4])
        channel.embeddedEventLoop.advanceTime(by: .microseconds(100))
        XCTAssertEqual(handled, [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(counter.reads, readsBefore + 1, "the read held back is passed on once nothing waits")

        // A link that closes with messages waiting hands them on before it says so.
        channel.pipeline.fireChannelRead((7...9).map { ModuleLinkMessage.pong(UInt64($0)) })
        XCTAssertEqual(handled.count, 8)
        _ = try channel.finish()
        XCTAssertEqual(handled, Array(1...9))
        XCTAssertTrue(closed)
    }
}
