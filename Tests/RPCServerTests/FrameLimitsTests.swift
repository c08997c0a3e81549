import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCJSON
import RPCLogging
import RPCProtocol
@testable import RPCServer
import RPCWire
import XCTest

/// The limits on what received frames may hold (issue 14): the budget shared by every connection
/// (`MaxBufferedBytes=`), the frame deadline (`FrameTimeout=`), the bytes a call keeps of its frame, and the
/// in-flight limit for batches. Each connection is the server's own pipeline on an `EmbeddedChannel`.
final class FrameLimitsTests: XCTestCase {
    private let statistics = RPCStatistics()
    private var router: RPCRouter!
    private var channels: [EmbeddedChannel] = []
    private let loop = EmbeddedEventLoop()

    override func setUpWithError() throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(services: [SleepEchoService()]), parser: RPCEnvelopeParser(),
            statistics: statistics)
    }

    override func tearDown() {
        for channel in channels { _ = try? channel.finish() }
    }

    /// A connection with the server's pipeline; connections made with the same `budget` share it.
    private func connect(
        budget: InboundByteBudget, maxFrameSize: Int = 1 << 20, maxCalls: Int = 128, frameTimeout: Duration = .seconds(60)
    ) throws -> EmbeddedChannel {
        let configuration = RPCServer.Configuration(
            listen: [],
            limits: ConnectionLimits {
                $0.maxFrameSize = maxFrameSize
                $0.maxCallsPerConnection = maxCalls
                $0.frameTimeout = frameTimeout
                $0.idleTimeout = nil
            })
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandlers(
            ConnectionPipeline.handlers(
                configuration: configuration, router: router,
                connection: RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "test")),
                budget: budget, refusalLog: LogRateLimiter(burst: 10, per: .seconds(1))))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channels.append(channel)
        return channel
    }

    private func replies(_ channel: EmbeddedChannel) throws -> [JSONValue] {
        var bytes = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&part) }
        var replies: [JSONValue] = []
        while let length = bytes.readInteger(endianness: .big, as: UInt32.self) {
            replies.append(try JSONValue(parsing: XCTUnwrap(bytes.readString(length: Int(length)))))
        }
        return replies
    }

    private func header(announcing length: Int) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(length), endianness: .big)
        return buffer
    }

    func testAnnouncedFramesFillTheBudgetAndTheNextFrameIsRefused() throws {
        let budget = InboundByteBudget(limit: 10_000, statistics: statistics)
        let trickling = try connect(budget: budget)
        var start = header(announcing: 9_000)
        start.writeString(#"{"jsonrpc":"2.0""#)
        try trickling.writeInbound(start)
        XCTAssertEqual(statistics.bufferedBytes.value, 9_000, "charged at its announced length, before the bytes pile up")

        let late = try connect(budget: budget)
        var call = ByteBuffer()
        call.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.echo","params":[\#(String(repeating: "1,", count: 600))1],"id":1}"#)
        _ = try? late.writeInbound(call)
        let refused = try replies(late)
        XCTAssertEqual(refused.first?["error"]?["code"], -32009)
        XCTAssertEqual(refused.first?["error"]?["message"], "Server busy")
        XCTAssertEqual(refused.first?["error"]?["data"]?["limit"], 10_000)
        XCTAssertFalse(late.isActive, "a refused frame cannot be skipped: the connection is closed")
        XCTAssertEqual(statistics.refusedFrames.value, 1)

        try trickling.close().wait()
        loop.run()  // the pipeline's handlers are removed after the close
        XCTAssertEqual(statistics.bufferedBytes.value, 0, "a closed connection gives back what its partial frame held")
        let next = try connect(budget: budget)
        try next.writeInbound(call)
        XCTAssertEqual(try replies(next).first?["id"], 1)
        XCTAssertEqual(statistics.bufferedBytes.value, 0, "answered calls give their bytes back")
    }

    func testATrickledFrameIsRefusedAtItsDeadline() throws {
        let channel = try connect(budget: InboundByteBudget(limit: 1 << 20, statistics: statistics), frameTimeout: .seconds(30))
        let wire = { () -> ByteBuffer in
            var buffer = ByteBuffer()
            buffer.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.echo","params":[1],"id":1}"#)
            return buffer
        }()
        try channel.writeInbound(wire.getSlice(at: 0, length: 4)!)  // the length: the deadline starts
        for second in 1..<30 {
            // A byte a second keeps an idle timer happy, not the deadline.
            loop.advanceTime(by: .seconds(1))
            try channel.writeInbound(wire.getSlice(at: 3 + second, length: 1)!)
        }
        XCTAssertTrue(channel.isActive)
        loop.advanceTime(by: .seconds(1))
        let reply = try replies(channel)
        XCTAssertEqual(reply.first?["error"]?["code"], -32010)
        XCTAssertEqual(reply.first?["error"]?["data"]?["timeout_s"], 30)
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(statistics.bufferedBytes.value, 0)
    }

    func testAFrameCompletedInTimeHasNoDeadlineLeft() throws {
        let channel = try connect(budget: InboundByteBudget(limit: 1 << 20, statistics: statistics), frameTimeout: .seconds(5))
        var wire = ByteBuffer()
        wire.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.echo","params":[1],"id":1}"#)
        try channel.writeInbound(wire.getSlice(at: 0, length: 10)!)
        loop.advanceTime(by: .seconds(4))
        try channel.writeInbound(wire.getSlice(at: 10, length: wire.readableBytes - 10)!)
        loop.advanceTime(by: .seconds(60))
        XCTAssertEqual(try replies(channel).map { $0["result"] }, [[1]])
        XCTAssertTrue(channel.isActive)
    }

    /// A call keeps only what it uses of its frame: 100 calls each carrying an ignored 100 KB member hold a few
    /// kilobytes while they run, not 10 MB.
    func testACallDoesNotPinTheMembersItIgnores() throws {
        let channel = try connect(budget: InboundByteBudget(limit: 1 << 30, statistics: statistics))
        let padding = String(repeating: "x", count: 100_000)
        var input = ByteBuffer()
        for id in 1...100 {
            input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","padding":"\#(padding)","params":[50],"id":\#(id)}"#)
        }
        try channel.writeInbound(input)
        XCTAssertLessThan(statistics.bufferedBytes.value, 100 * 64, "params and id only, not the frames")
        loop.advanceTime(by: .milliseconds(50))
        XCTAssertEqual(try replies(channel).count, 100)
        XCTAssertEqual(statistics.bufferedBytes.value, 0)
    }

    func testABatchRunsNoMoreEntriesAtOnceThanTheInFlightLimit() throws {
        let channel = try connect(budget: InboundByteBudget(limit: 1 << 20, statistics: statistics), maxCalls: 2)
        let entries = (1...5).map { #"{"jsonrpc":"2.0","method":"echo.sleep","params":[10],"id":\#($0)}"# }
        var input = ByteBuffer()
        input.writeLengthPrefixedFrame("[" + entries.joined(separator: ",") + "]")
        try channel.writeInbound(input)
        // Two at a time, 10 ms each: five entries take 30 ms, not 10.
        loop.advanceTime(by: .milliseconds(20))
        XCTAssertEqual(try replies(channel).count, 0)
        loop.advanceTime(by: .milliseconds(10))
        let batch = try XCTUnwrap(replies(channel).first)
        XCTAssertEqual(batch.arrayValue?.compactMap { $0["id"]?.intValue }, [1, 2, 3, 4, 5])
    }
}
