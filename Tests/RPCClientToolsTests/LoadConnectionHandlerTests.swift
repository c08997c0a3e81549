import NIOCore
import NIOEmbedded
import RPCTestSupport
import RPCJSON
import XCTest

@testable import RPCClientTools

/// Keeps every latency it is given.
struct CollectingRecorder: RPCLatencyRecorder {
    var samples: [UInt64] = []
    init() {}
    mutating func record(nanoseconds: UInt64) { samples.append(nanoseconds) }
}

final class LoadConnectionHandlerTests: XCTestCase {
    private func reply(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    func testRequestFramesCarryTheSlotAsID() throws {
        let configuration = RPCLoadConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: 1), method: "echo.echo", params: ["x"], depth: 3)
        let frames = RPCLoadGenerator.requestFrames(configuration)
        XCTAssertEqual(frames.count, 3)
        for (slot, var frame) in frames.enumerated() {
            let length = try XCTUnwrap(frame.readInteger(endianness: .big, as: UInt32.self))
            XCTAssertEqual(Int(length), frame.readableBytes)
            XCTAssertEqual(
                String(buffer: frame), #"{"jsonrpc":"2.0","method":"echo.echo","params":["x"],"id":\#(slot)}"#)
        }
    }

    func testKeepsDepthInFlightCountsRepliesAndErrorsThenDrains() throws {
        let configuration = RPCLoadConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: 1), method: "rpcd.ping", depth: 2)
        let frames = RPCLoadGenerator.requestFrames(configuration)
        let channel = EmbeddedChannel()
        let done = channel.eventLoop.makePromise(of: LoadConnectionStats<CollectingRecorder>.self)
        try channel.pipeline.syncOperations.addHandler(LoadConnectionHandler<CollectingRecorder>(frames: frames, done: done))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()

        channel.embeddedEventLoop.advanceTime(by: .seconds(10))  // so that measureStart is a second after boot
        let now = channel.embeddedEventLoop.now
        let window = LoadWindow(
            measureStart: now - .seconds(1), measureEnd: now + .milliseconds(500), drainTimeout: .seconds(5))
        channel.pipeline.fireUserInboundEventTriggered(window)
        XCTAssertEqual(try channel.readOutbound(as: ByteBuffer.self), frames[0])
        XCTAssertEqual(try channel.readOutbound(as: ByteBuffer.self), frames[1])
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self), "depth 2: two calls in flight")

        try channel.writeInbound(reply(#"{"jsonrpc":"2.0","result":"pong","id":1}"#))
        XCTAssertEqual(try channel.readOutbound(as: ByteBuffer.self), frames[1], "slot 1 is sent again")
        try channel.writeInbound(reply(#"{"jsonrpc":"2.0","error":{"code":1,"message":"x"},"id":0}"#))
        XCTAssertEqual(try channel.readOutbound(as: ByteBuffer.self), frames[0])
        XCTAssertNil(outcome(done.futureResult))

        channel.embeddedEventLoop.advanceTime(by: .milliseconds(600))  // past measureEnd: replies now only drain
        try channel.writeInbound(reply(#"{"jsonrpc":"2.0","result":"pong","id":0}"#))
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self), "nothing is sent after the window")
        XCTAssertNil(outcome(done.futureResult), "one call still in flight")
        try channel.writeInbound(reply(#"{"jsonrpc":"2.0","result":"pong","id":1}"#))

        let stats = try XCTUnwrap(value(done.futureResult))
        XCTAssertEqual(stats.calls, 2)
        XCTAssertEqual(stats.errors, 1)
        XCTAssertEqual(stats.recorder.samples.count, 2)
        XCTAssertNil(stats.failure)
        XCTAssertEqual(stats.unanswered, 0)
        XCTAssertEqual(stats.firstError, #"{"jsonrpc":"2.0","error":{"code":1,"message":"x"},"id":0}"#)
    }

    func testWarmupRepliesAreNotCounted() throws {
        let frames = RPCLoadGenerator.requestFrames(
            RPCLoadConfiguration(endpoint: .unix(path: "/x"), method: "rpcd.ping", depth: 1))
        let channel = EmbeddedChannel()
        let done = channel.eventLoop.makePromise(of: LoadConnectionStats<CollectingRecorder>.self)
        try channel.pipeline.syncOperations.addHandler(LoadConnectionHandler<CollectingRecorder>(frames: frames, done: done))
        let now = channel.embeddedEventLoop.now
        channel.pipeline.fireUserInboundEventTriggered(
            LoadWindow(measureStart: now + .seconds(60), measureEnd: now + .seconds(70), drainTimeout: .seconds(1)))
        try channel.writeInbound(reply(#"{"jsonrpc":"2.0","result":"pong","id":0}"#))
        try channel.writeInbound(reply(#"{"jsonrpc":"2.0","result":"pong","id":0}"#))
        channel.pipeline.fireChannelInactive()
        let stats = try XCTUnwrap(value(done.futureResult))
        XCTAssertEqual(stats.calls, 0)
        XCTAssertEqual(stats.warmupCalls, 2)
        XCTAssertEqual(stats.recorder.samples, [])
        XCTAssertNotNil(stats.failure, "a server that closes during the run is a connection failure")
    }

    func testUnmatchableReplyFailsTheConnection() throws {
        let frames = RPCLoadGenerator.requestFrames(
            RPCLoadConfiguration(endpoint: .unix(path: "/x"), method: "rpcd.ping", depth: 1))
        let channel = EmbeddedChannel()
        let done = channel.eventLoop.makePromise(of: LoadConnectionStats<CollectingRecorder>.self)
        try channel.pipeline.syncOperations.addHandler(LoadConnectionHandler<CollectingRecorder>(frames: frames, done: done))
        let now = channel.embeddedEventLoop.now
        channel.pipeline.fireUserInboundEventTriggered(
            LoadWindow(measureStart: now, measureEnd: now + .seconds(10), drainTimeout: .seconds(1)))
        try channel.writeInbound(reply(#"{"jsonrpc":"2.0","result":"pong","id":5}"#))
        let stats = try XCTUnwrap(value(done.futureResult))
        XCTAssertEqual(stats.failure?.hasPrefix("unexpected reply"), true, stats.failure ?? "nil")
        XCTAssertEqual(stats.unanswered, 1)
    }
}
