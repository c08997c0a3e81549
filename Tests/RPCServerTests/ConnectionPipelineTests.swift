import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import NIOExtras
import RPCCore
import RPCJSON
import RPCLogging
import RPCProtocol
@testable import RPCServer
import RPCTestSupport
import RPCWire
import XCTest

/// Drives the exact per-connection pipeline the server installs through an `EmbeddedChannel`.
final class ConnectionPipelineTests: XCTestCase {
    private var channel: EmbeddedChannel!
    private var reads: ReadCounter!
    private var router: RPCRouter!
    private var ledger: PeerLedger!

    private func makeChannel(
        maxCallsPerConnection: Int = 128, maxFrameSize: Int = 1 << 20, idleTimeout: Duration? = nil
    ) throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(services: [SleepEchoService(), DaemonService(state: RPCServerState(), statistics: RPCStatistics())]),
            parser: RPCEnvelopeParser())
        let configuration = RPCServer.Configuration(
            listen: [],
            limits: ConnectionLimits {
                $0.maxFrameSize = maxFrameSize
                $0.maxCallsPerConnection = maxCallsPerConnection
                $0.idleTimeout = idleTimeout
            })
        reads = ReadCounter()
        ledger = PeerLedger(limits: configuration.limits, administrators: RPCPeerSet([]), statistics: router.statistics)
        channel = try PipelineChannel.make(configuration: configuration, router: router, ledger: ledger, first: reads)
    }

    override func tearDown() {
        _ = try? channel?.finish()
    }

    private func outboundFrames() throws -> [String] {
        try PipelineChannel.writtenFrames(channel)
    }

    func testRequestFrameGetsReplyFrame() throws {
        try makeChannel()
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#))
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":"pong","id":1}"#])
    }

    func testRequestArrivingByteByByte() throws {
        try makeChannel()
        let wire = ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.echo","params":{"a":[1]},"id":"x"}"#)
        for index in 0..<wire.readableBytes {
            try channel.writeInbound(wire.getSlice(at: index, length: 1)!)
        }
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":{"a":[1]},"id":"x"}"#])
    }

    func testPipelinedCallsAreAnsweredAsTheyComplete() throws {
        try makeChannel()
        var input = ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.sleep","params":[100],"id":1}"#)
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":2}"#)
        try channel.writeInbound(input)
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":"pong","id":2}"#])
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":"done","id":1}"#])
    }

    /// A read burst's replies leave as one buffer (one write, one promise), in order, a reply too large to copy
    /// included; once written, nothing of them stays charged to the peer.
    func testTheRepliesOfABurstAreWrittenAsOneBuffer() throws {
        try makeChannel()
        var input = ByteBuffer()
        for id in 1...3 { input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":\#(id)}"#) }
        try channel.writeInbound(input)
        let written = try XCTUnwrap(channel.readOutbound(as: ByteBuffer.self))
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self), "one buffer for the burst")
        var frames = written
        XCTAssertEqual(WireFrame.payloads(in: &frames).map { String($0.suffix(2).prefix(1)) }, ["1", "2", "3"])
        XCTAssertEqual(ledger.charged(to: .unixSocket()), 0, "written replies are given back")

        let large = String(repeating: "x", count: 8192)
        input = ByteBuffer()
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.echo","params":["\#(large)"],"id":2}"#)
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":3}"#)
        try channel.writeInbound(input)
        XCTAssertEqual(try outboundFrames(), [
            #"{"jsonrpc":"2.0","result":"pong","id":1}"#, #"{"jsonrpc":"2.0","result":["\#(large)"],"id":2}"#,
            #"{"jsonrpc":"2.0","result":"pong","id":3}"#,
        ])
        XCTAssertEqual(ledger.charged(to: .unixSocket()), 0)
    }

    /// Answers delivered together (`RPCConnectionOutput.deliver`: a module host's answers of one read of its
    /// link) run as one burst of the connection's: their replies leave as one buffer at its end; outside such
    /// a delivery each goes out at once.
    func testRepliesOfAnswersDeliveredTogetherLeaveAsOneBufferAtTheDeliverysEnd() throws {
        try makeChannel()
        var input = ByteBuffer()
        for id in 1...3 { input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","params":[\#(id * 100)],"id":\#(id)}"#) }
        try channel.writeInbound(input)
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self))
        let output = try channel.pipeline.syncOperations.handler(type: RPCConnectionHandler.self)
        // Each answer completes one call (its timer fires).
        let loop = channel.embeddedEventLoop
        let answer = RPCConnectionAnswer { loop.advanceTime(by: .milliseconds(100)) }
        output.deliver([answer, answer, answer])
        var written = try XCTUnwrap(channel.readOutbound(as: ByteBuffer.self))
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self), "one buffer for the delivery's replies")
        XCTAssertEqual(WireFrame.payloads(in: &written).count, 3)

        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.sleep","params":[100],"id":4}"#))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":"done","id":4}"#], "nothing held outside a delivery")
    }

    /// The frame receiver hands frames to the connection handler by a call, not through the pipeline; once
    /// that handler is gone, a frame it would have answered is dropped and its charge given back, as the
    /// pipeline's tail would drop it.
    func testAFrameForARemovedConnectionHandlerIsGivenBack() throws {
        try makeChannel()
        let handler = try channel.pipeline.syncOperations.handler(type: RPCConnectionHandler.self)
        try channel.pipeline.syncOperations.removeHandler(handler).wait()
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#))
        XCTAssertEqual(try outboundFrames(), [])
        XCTAssertEqual(ledger.charged(to: .unixSocket()), 0)
    }

    func testGarbageFrameGetsParseErrorAndConnectionStaysOpen() throws {
        try makeChannel()
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: "\u{01}\u{02}garbage"))
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: ""))
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"rpcd.ping","id":3}"#))
        let replies = try outboundFrames()
        XCTAssertEqual(replies.count, 3)
        XCTAssertTrue(replies[0].contains("-32700"))
        XCTAssertTrue(replies[1].contains("-32700"))
        XCTAssertEqual(replies[2], #"{"jsonrpc":"2.0","result":"pong","id":3}"#)
        XCTAssertTrue(channel.isActive)
    }

    func testOversizeFrameIsAnsweredThenClosed() throws {
        try makeChannel(maxFrameSize: 64)
        _ = try? channel.writeInbound(ByteBuffer(bytes: WireFrame.header(announcing: 1 << 30)))
        let replies = try outboundFrames()
        XCTAssertEqual(replies.count, 1)
        let reply = try JSONValue(parsing: replies[0])
        XCTAssertEqual(reply["error"]?["code"], -32000)
        XCTAssertEqual(reply["error"]?["data"]?["length"], .number(1 << 30))
        XCTAssertEqual(reply["error"]?["data"]?["limit"], 64)
        XCTAssertEqual(reply["id"], .null)
        XCTAssertFalse(channel.isActive, "the stream cannot be resynchronised, so it is closed")
    }

    /// A refused frame ends the stream, not the calls read before it: the call answered at once, the one still
    /// running and the one waiting for a call slot are all answered, then the refusal, then the close.
    func testCallsReadBeforeAnOversizeFrameAreAnsweredBeforeTheRefusal() throws {
        try makeChannel(maxCallsPerConnection: 2, maxFrameSize: 256)
        var input = ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","params":[50],"id":2}"#)
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","params":[10],"id":3}"#)
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","params":[10],"id":4}"#)
        input.writeBytes(WireFrame.header(announcing: 1 << 30))
        try channel.writeInbound(input)
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":"pong","id":1}"#])
        XCTAssertTrue(channel.isActive, "calls read before the refused frame are still to answer")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(50))
        let frames = try outboundFrames()
        XCTAssertEqual(Set(frames.dropLast()), [
            #"{"jsonrpc":"2.0","result":"done","id":2}"#, #"{"jsonrpc":"2.0","result":"done","id":3}"#,
            #"{"jsonrpc":"2.0","result":"done","id":4}"#,
        ])
        XCTAssertEqual(try JSONValue(parsing: try XCTUnwrap(frames.last))["error"]?["code"], -32000)
        XCTAssertFalse(channel.isActive)
    }

    func testReadingStopsAtTheInFlightLimitAndResumes() throws {
        try makeChannel(maxCallsPerConnection: 2)
        var input = ByteBuffer()
        for (id, ms) in [(1, 10), (2, 30), (3, 10)] {
            input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","params":[\#(ms)],"id":\#(id)}"#)
        }
        try channel.writeInbound(input)

        let readsBefore = reads.count
        channel.read()
        XCTAssertEqual(reads.count, readsBefore, "at the limit, with a frame waiting, no read reaches the socket")

        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))
        XCTAssertEqual(try outboundFrames().count, 1, "call 1 answered")
        XCTAssertEqual(reads.count, readsBefore, "call 3 took the free slot: still at the limit, read still held")

        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))
        XCTAssertEqual(try outboundFrames().count, 1, "call 3 answered")
        XCTAssertEqual(reads.count, readsBefore + 1, "room again: the held read is passed on")

        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))
        XCTAssertEqual(try outboundFrames().count, 1, "call 2 answered")
    }

    /// A peer that stops reading its replies makes the channel unwritable: from then on no frame of its is run
    /// and no read is asked for, so it cannot make rpcd pile up replies (issue 14); once it drains, everything
    /// held back is served.
    func testAPeerThatDoesNotReadIsNotServedUntilItDoes() throws {
        try makeChannel()
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        var input = ByteBuffer()
        for id in 1...3 { input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.echo","params":[\#(id)],"id":\#(id)}"#) }
        try channel.writeInbound(input)
        XCTAssertEqual(try outboundFrames(), [], "nothing is run while the peer does not read")
        let readsBefore = reads.count
        channel.read()
        XCTAssertEqual(reads.count, readsBefore, "no read reaches the socket")

        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        XCTAssertEqual(try outboundFrames().count, 3, "the held frames are served in order")
        XCTAssertEqual(reads.count, readsBefore + 1, "and the held read is passed on")
    }

    /// `rpc.cancel` finds a call by its id as the JSON text the client sent (issue 21): `"\u0041"` is not `"A"`.
    func testCancelComparesIdsAsTheirJSONText() throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(services: [SleepEchoService(), RPCDiscoverService()]), parser: RPCEnvelopeParser())
        channel = try PipelineChannel.make(configuration: RPCServer.Configuration(listen: []), router: router)
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.sleep","params":[60000],"id":"A"}"#))
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"rpc.cancel","params":["\u0041"],"id":2}"#))
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":false,"id":2}"#])
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"A"},"id":3}"#))
        let frames = try outboundFrames()
        XCTAssertTrue(frames.contains(#"{"jsonrpc":"2.0","result":true,"id":3}"#), "\(frames)")
        XCTAssertTrue(frames.contains { $0.contains("-32011") && $0.contains(#""id":"A""#) }, "\(frames)")
    }

    func testIdleConnectionIsClosedOnlyWhenNothingIsInFlight() throws {
        try makeChannel(idleTimeout: .seconds(5))
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.sleep","params":[60000],"id":1}"#))
        channel.embeddedEventLoop.advanceTime(by: .seconds(59))
        XCTAssertTrue(channel.isActive, "idle for 59 s, but a call is in flight")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertEqual(try outboundFrames().count, 1, "the reply is traffic: the idle clock starts again")
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        XCTAssertTrue(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertFalse(channel.isActive, "5 s without traffic and nothing in flight")
    }

    func testQuiescingClosesAfterTheLastReply() throws {
        try makeChannel()
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.sleep","params":[50],"id":1}"#))
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        XCTAssertTrue(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(50))
        XCTAssertEqual(try outboundFrames(), [
            #"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":1,"accepted":1}}"#,
            #"{"jsonrpc":"2.0","result":"done","id":1}"#,
        ])
        XCTAssertFalse(channel.isActive)
    }

    /// The last reply, held by a delivery of answers (a module host's answers of one read), is sent before the
    /// close.
    func testQuiescingSendsTheLastReplyOfADeliveryBeforeClosing() throws {
        try makeChannel()
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.sleep","params":[50],"id":1}"#))
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        let loop = channel.embeddedEventLoop
        try channel.pipeline.syncOperations.handler(type: RPCConnectionHandler.self).deliver([
            RPCConnectionAnswer { loop.advanceTime(by: .milliseconds(50)) },
        ])
        XCTAssertEqual(try outboundFrames(), [
            #"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":1,"accepted":1}}"#,
            #"{"jsonrpc":"2.0","result":"done","id":1}"#,
        ])
        XCTAssertFalse(channel.isActive)
    }

    /// Stopping (PROTOCOL.md §4, "Shutdown"): the client is told at once which of its messages were accepted;
    /// a frame waiting for a call slot, and whatever arrives later, is answered -32006 (did not run), a batch
    /// with one error per entry with an id; the accepted call is answered, then the connection closes.
    func testStoppingNamesTheCutAndRefusesWhatCameAfterIt() throws {
        try makeChannel(maxCallsPerConnection: 1)
        var input = ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.sleep","params":[50],"id":"a"}"#)
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":2}"#)
        input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping"}"#)
        try channel.writeInbound(input)
        XCTAssertEqual(try outboundFrames(), [])
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        XCTAssertEqual(try outboundFrames(), [
            #"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":"a","accepted":1}}"#,
            #"{"jsonrpc":"2.0","error":{"code":-32006,"message":"Server shutting down"},"id":2}"#,
        ])
        var later = ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"rpcd.ping","id":3}"#)
        later.writeLengthPrefixedFrame(#"[{"jsonrpc":"2.0","method":"rpcd.ping","id":4},{"jsonrpc":"2.0","method":"rpcd.ping"}]"#)
        try channel.writeInbound(later)
        XCTAssertEqual(try outboundFrames(), [
            #"{"jsonrpc":"2.0","error":{"code":-32006,"message":"Server shutting down"},"id":3}"#,
            #"[{"jsonrpc":"2.0","error":{"code":-32006,"message":"Server shutting down"},"id":4}]"#,
        ])
        XCTAssertTrue(channel.isActive, "the accepted call is still running")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(50))
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","result":"done","id":"a"}"#])
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged(to: .unixSocket()), 0, "refused frames give back what they held")
    }

    /// `rpc.cancel` still runs while stopping: it ends an accepted call sooner, and the connection closes.
    func testACancellationReadWhileStoppingStillRuns() throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(services: [SleepEchoService(), RPCDiscoverService()]), parser: RPCEnvelopeParser())
        channel = try PipelineChannel.make(configuration: RPCServer.Configuration(listen: []), router: router)
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.sleep","params":[60000],"id":1}"#))
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"rpc.cancel","params":[1],"id":2}"#))
        let frames = try outboundFrames()
        XCTAssertEqual(frames.first, #"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":1,"accepted":1}}"#)
        XCTAssertTrue(frames.contains(#"{"jsonrpc":"2.0","result":true,"id":2}"#), "\(frames)")
        XCTAssertTrue(frames.contains { $0.contains("-32011") && $0.contains(#""id":1"#) }, "\(frames)")
        channel.embeddedEventLoop.run()
        XCTAssertFalse(channel.isActive)
    }

    func testStoppingAQuietConnectionSaysNothingWasAcceptedAndCloses() throws {
        try makeChannel()
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        XCTAssertEqual(try outboundFrames(), [#"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":null,"accepted":0}}"#])
        XCTAssertFalse(channel.isActive)
    }

    func testBatchOfNotificationsWritesNothing() throws {
        try makeChannel()
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: #"[{"jsonrpc":"2.0","method":"rpcd.ping"},{"jsonrpc":"2.0","method":"echo.echo","params":[]}]"#))
        XCTAssertEqual(try outboundFrames(), [])
    }
}

/// Counts `read()` calls that get past the handlers above it, i.e. that would reach the socket.
final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = Any
    private(set) var count = 0
    func read(context: ChannelHandlerContext) {
        count += 1
        context.read()
    }
}
