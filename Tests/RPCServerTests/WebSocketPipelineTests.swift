import JSONRPC
import NIOCore
import NIOEmbedded
import NIOWebSocket
import RPCCore
import RPCProtocol
@testable import RPCServer
import RPCTestSupport
import XCTest

/// The handlers of a connection upgraded to WebSocket (`WebSocketPipeline`) on an `EmbeddedChannel`, behind
/// `HeldWrites` (a socket whose peer reads only when told): the frames written, byte for byte, in each of
/// the header's length forms, and what they are charged to the peer until the socket takes them.
final class WebSocketPipelineTests: XCTestCase {
    private var channel: EmbeddedChannel!
    private var socket: HeldWrites!
    private var ledger: PeerLedger!
    private var router: RPCRouter!

    private func makeChannel(share: Int? = nil) throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(
                services: [SleepEchoService(), TickService(), RPCDiscoverService(), DaemonService(state: RPCServerState(), statistics: RPCStatistics())]),
            parser: RPCEnvelopeParser())
        let limits = ConnectionLimits {
            $0.maxFrameSize = 256 << 10
            $0.idleTimeout = nil
            if let share {
                $0.maxFrameSize = share  // the ledger gives a peer at least one frame
                $0.maxBufferedBytesPerPeer = share
            }
        }
        ledger = PeerLedger(limits: limits, administrators: RPCPeerSet([]), statistics: router.statistics)
        socket = HeldWrites()
        channel = try PipelineChannel.make(
            configuration: RPCServer.Configuration(listen: [], limits: limits), router: router, ledger: ledger, first: socket,
            webSocket: true)
    }

    override func tearDown() {
        _ = try? channel?.finish()
    }

    /// The buffers written so far, each as the socket was handed it.
    private func writes() throws -> [[UInt8]] {
        socket.peerReads()
        var writes: [[UInt8]] = []
        while let part = try channel.readOutbound(as: ByteBuffer.self) { writes.append(Array(part.readableBytesView)) }
        return writes
    }

    private func frames() throws -> [WebSocketWire.Frame] {
        var bytes = ByteBuffer(bytes: try writes().joined())
        let frames = WebSocketWire.serverFrames(in: &bytes)
        XCTAssertEqual(bytes.readableBytes, 0, "whole frames only")
        return frames
    }

    /// `echo.echo` of a string param as long as it takes for the reply to be `length` bytes: the call, and its reply.
    private static func echo(replyLength length: Int) -> (call: String, reply: String) {
        let shell = #"{"jsonrpc":"2.0","result":[""],"id":1}"#.utf8.count
        let text = String(repeating: "x", count: length - shell)
        return (#"{"jsonrpc":"2.0","method":"echo.echo","params":["\#(text)"],"id":1}"#, #"{"jsonrpc":"2.0","result":["\#(text)"],"id":1}"#)
    }

    /// A server's frame header has FIN, the opcode, no mask bit, and the length in the shortest form that holds
    /// it (RFC 6455 §5.2): 7 bits up to 125, 126 and 16 bits up to 65 535, 127 and 64 bits above.
    func testFrameHeaderTakesTheShortestLengthForm() {
        typealias Case = (opcode: WebSocketOpcode, length: Int, header: [UInt8])
        let cases: [Case] = [
            (.text, 0, [0x81, 0]),
            (.text, 125, [0x81, 125]),
            (.text, 126, [0x81, 126, 0x00, 0x7E]),
            (.text, 0xFFFF, [0x81, 126, 0xFF, 0xFF]),
            (.text, 0x1_0000, [0x81, 127, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00]),
            (.text, 0x1_2345_6789, [0x81, 127, 0, 0, 0, 0x01, 0x23, 0x45, 0x67, 0x89]),
            (.pong, 2, [0x8A, 2]),
            (.connectionClose, 2, [0x88, 2]),
        ]
        for (opcode, length, header) in cases {
            var buffer = ByteBuffer()
            buffer.writeWebSocketFrameHeader(opcode, payloadLength: length)
            XCTAssertEqual(Array(buffer.readableBytesView), header, "\(opcode) of \(length) bytes")
            XCTAssertEqual(WebSocketFrameHeader.size(payloadLength: length), header.count, "\(length) bytes")
        }
    }

    /// Replies in each length form, byte for byte: up to `ChargedOutput.coalescingLimit` the header and the
    /// reply in the output buffer, in one write; above it the header with the reply's head, then the result as
    /// it is, then the reply's tail (three writes: the result is not copied).
    func testRepliesAreTextFramesByteForByteInEveryLengthForm() throws {
        try makeChannel()
        let limit = ChargedOutput.coalescingLimit
        for length in [40, 125, 126, limit, limit + 1, 0xFFFF, 0x1_0000, 0x1_0000 + 7] {
            let (call, reply) = Self.echo(replyLength: length)
            try channel.writeInbound(WebSocketWire.clientFrame(opcode: 0x1, call))
            let header = [0x81] + WebSocketWire.lengthBytes(length)
            let head = Array(#"{"jsonrpc":"2.0","result":"#.utf8), tail = Array(#","id":1}"#.utf8)
            let result = Array(reply.utf8.dropFirst(head.count).dropLast(tail.count))
            let expected = length <= limit ? [header + Array(reply.utf8)] : [header + head, result, tail]
            XCTAssertEqual(try writes(), expected, "a reply of \(length) bytes")
            XCTAssertEqual(ledger.charged, 0)
        }
    }

    /// The replies of a read burst go out in one buffer, each behind its own header.
    func testRepliesOfOneReadAreOneWrite() throws {
        try makeChannel()
        var burst = ByteBuffer()
        for id in 1...3 {
            var frame = WebSocketWire.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":\#(id)}"#)
            burst.writeBuffer(&frame)
        }
        try channel.writeInbound(burst)
        let replies = (1...3).map { Array(#"{"jsonrpc":"2.0","result":"pong","id":\#($0)}"#.utf8) }
        XCTAssertEqual(try writes(), [replies.flatMap { [0x81, UInt8($0.count)] + $0 }])
    }

    /// What is written is charged to the peer, header and payload, until the socket takes it; then it is given
    /// back. In both ways out: the output buffer, and a large reply written apart.
    func testOutputIsChargedUntilTheSocketTakesIt() throws {
        try makeChannel()
        try channel.writeInbound(WebSocketWire.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#))
        XCTAssertEqual(ledger.charged, 2 + #"{"jsonrpc":"2.0","result":"pong","id":1}"#.utf8.count, "the frame, not taken")
        socket.peerReads()
        XCTAssertEqual(ledger.charged, 0)

        let (call, _) = Self.echo(replyLength: 10_000)
        try channel.writeInbound(WebSocketWire.clientFrame(opcode: 0x1, call))
        XCTAssertEqual(ledger.charged, 4 + 10_000)
        socket.peerReads()
        XCTAssertEqual(ledger.charged, 0)
    }

    /// A pong is charged to the peer until the socket takes it, as a reply is: a peer that pings and never
    /// reads is closed with 1008 once its pongs fill its share, rather than piling them up uncharged.
    func testPongsAreChargedUntilTheSocketTakesThem() throws {
        try makeChannel(share: 4096)
        let ping = WebSocketWire.clientFrame(opcode: 0x9, bytes: Array(repeating: 0x61, count: 125))
        try channel.writeInbound(ping)
        XCTAssertEqual(ledger.charged, 2 + 125, "the pong, not taken")
        socket.peerReads()
        XCTAssertEqual(ledger.charged, 0)

        for _ in 0..<40 { try channel.writeInbound(ping) }
        XCTAssertEqual(ledger.charged, 4096 / 127 * 127 + 4, "the pongs that fit the share, and the close frame")
        socket.peerReads()
        let frames = try frames()
        XCTAssertEqual(frames.filter { $0.opcode == 0xA }.count, 1 + 4096 / 127)
        XCTAssertEqual(frames.last, WebSocketWire.Frame(opcode: 0x8, bytes: [0x03, 0xF0]))  // 1008
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    /// The payloads are unmasked in a copy of each read as they pass (`WebSocketFrameReceiver`): however the
    /// reads cut the frames (through a header, a mask key, a payload), the messages are the same.
    func testMessagesAreUnmaskedHoweverTheReadsCutThem() throws {
        let (long, longReply) = Self.echo(replyLength: 300)
        var stream = ByteBuffer()
        for var frame in [
            WebSocketWire.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":7}"#),
            WebSocketWire.clientFrame(opcode: 0x1, fin: false, #"{"jsonrpc":"2.0","method":"echo.ec"#),
            WebSocketWire.clientFrame(opcode: 0x9, "ping data"),
            WebSocketWire.clientFrame(opcode: 0x0, #"ho","params":["fragments"],"id":8}"#),
            WebSocketWire.clientFrame(opcode: 0x1, long),
        ] {
            stream.writeBuffer(&frame)
        }
        // The pong is sent at once; replies at the end of the read burst, so it may come before them.
        let pong = WebSocketWire.Frame(opcode: 0xA, payload: "ping data")
        let replies: [WebSocketWire.Frame] = [
            .init(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":"pong","id":7}"#),
            .init(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":["fragments"],"id":8}"#),
            .init(opcode: 0x1, payload: longReply),
        ]
        for size in [stream.readableBytes, 1, 3, 7, 64] {
            try makeChannel()
            var input = stream
            while let read = input.readSlice(length: min(size, input.readableBytes)), read.readableBytes > 0 {
                try channel.writeInbound(read)
            }
            let frames = try frames()
            XCTAssertEqual(frames.filter { $0 != pong }, replies, "reads of \(size) bytes")
            XCTAssertEqual(frames.filter { $0 == pong }.count, 1, "reads of \(size) bytes")
            XCTAssertEqual(ledger.charged, 0)
            _ = try channel.finish()
        }
    }

    /// A notification has no reply, and a WebSocket message no empty answer: nothing is written.
    func testNotificationWritesNothing() throws {
        try makeChannel()
        try channel.writeInbound(WebSocketWire.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping"}"#))
        XCTAssertEqual(try writes(), [])
        XCTAssertEqual(ledger.charged, 0)
    }

    /// Events go out as text frames too, between replies, and are given back once taken.
    func testEventsAreTextFrames() throws {
        try makeChannel()
        try channel.writeInbound(
            WebSocketWire.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpc.subscribe","params":["ticks.tick"],"id":1}"#))
        router.events.publish("ticks.tick", payload: ByteBuffer(string: "7"))
        channel.embeddedEventLoop.run()
        XCTAssertEqual(
            try frames(),
            [
                .init(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":{"event":"ticks.tick","subscription":1},"id":1}"#),
                .init(opcode: 0x1, payload: #"{"jsonrpc":"2.0","method":"rpc.event","params":{"subscription":1,"event":"ticks.tick","seq":1,"data":7}}"#),
            ])
        XCTAssertEqual(ledger.charged, 0)
    }

    /// Replies of a read that ends with the client's close are not sent after the close frame (RFC 6455
    /// §5.5.1: no data frame after a close), and what they were charged is given back.
    func testNothingFollowsTheCloseFrame() throws {
        try makeChannel()
        var burst = WebSocketWire.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        var close = WebSocketWire.clientFrame(opcode: 0x8, bytes: [0x03, 0xE8])
        burst.writeBuffer(&close)
        try channel.writeInbound(burst)
        XCTAssertEqual(try frames(), [.init(opcode: 0x8, bytes: [0x03, 0xE8])])
        channel.embeddedEventLoop.run()
        XCTAssertFalse(channel.isActive)
        XCTAssertEqual(ledger.charged, 0)
    }

    /// Stopping over WebSocket (PROTOCOL.md §4, "Shutdown"): `rpc.goingAway` is a text message, what comes
    /// later is refused, the accepted call is answered, and the connection closes once the socket took it all.
    func testStoppingSaysGoingAwayThenAnswersThenCloses() throws {
        try makeChannel()
        try channel.writeInbound(
            WebSocketWire.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"echo.sleep","params":[50],"id":1}"#))
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        try channel.writeInbound(WebSocketWire.clientFrame(opcode: 0x1, #"{"jsonrpc":"2.0","method":"rpcd.ping","id":2}"#))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(50))
        XCTAssertEqual(
            try frames(),
            [
                .init(opcode: 0x1, payload: #"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":1,"accepted":1}}"#),
                .init(opcode: 0x1, payload: #"{"jsonrpc":"2.0","error":{"code":-32006,"message":"Server shutting down"},"id":2}"#),
                .init(opcode: 0x1, payload: #"{"jsonrpc":"2.0","result":"done","id":1}"#),
            ])
        channel.embeddedEventLoop.run()
        XCTAssertFalse(channel.isActive)
    }
}
