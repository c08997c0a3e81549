import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCJSON
import RPCLogging
import RPCProtocol
@testable import RPCServer
import RPCTestSupport
import RPCWire
import XCTest

/// The limits on what received frames may hold (issues 14, 21): each peer's account in the ledger shared by
/// every connection (`MaxBufferedBytesPerPeer=`, `MaxBufferedBytes=`), the frame deadline (`FrameTimeout=`), the bytes a call keeps of its frame, and the
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

    private let root = RPCPeer.unixSocket(.init(uid: 0, gid: 0, pid: 1))

    /// A ledger over `statistics`, with root as the administrator.
    private func makeLedger(limit: Int = 1 << 30, perPeer: Int = 1 << 30) -> PeerLedger {
        PeerLedger(
            limits: ConnectionLimits {
                $0.maxFrameSize = 1024
                $0.maxBufferedBytes = limit
                $0.maxBufferedBytesPerPeer = perPeer
            },
            administrators: RPCPeerSet([.user("0")]), statistics: statistics)
    }

    /// A connection of `peer` with the server's pipeline; its account is opened in `ledger`, and closed with it.
    private func connect(
        ledger: PeerLedger, peer: RPCPeer = .unixSocket(), maxFrameSize: Int = 1 << 20, maxCalls: Int = 128,
        frameTimeout: Duration = .seconds(60)
    ) throws -> EmbeddedChannel {
        let account = try XCTUnwrap(ledger.open(peer))
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
                connection: RPCConnectionInfo(id: 1, peer: peer, logger: Logger(label: "test"), account: account),
                refusalLog: LogRateLimiter(burst: 10, per: .seconds(1))))
        channel.closeFuture.whenComplete { _ in account.close() }
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channels.append(channel)
        return channel
    }

    private func replies(_ channel: EmbeddedChannel) throws -> [JSONValue] {
        var bytes = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&part) }
        return try WireFrame.payloads(in: &bytes).map { try JSONValue(parsing: $0) }
    }

    private func header(announcing length: Int) -> ByteBuffer {
        ByteBuffer(bytes: WireFrame.header(announcing: length))
    }

    private func call(_ id: Int) -> ByteBuffer {
        ByteBuffer(lengthPrefixedFrame: #"{"jsonrpc":"2.0","method":"echo.echo","params":[\#(id)],"id":\#(id)}"#)
    }

    /// 64 connections that announce large frames and send nothing more hold what arrived, not what was
    /// announced (issue 21: 256 bytes locked everyone out). What a peer does send is charged to it and refused
    /// past its share; other peers and root are served meanwhile, and once it leaves nothing stays charged.
    func testAnnouncedLengthsHoldNothingAndOnePeerCannotSpendAnothersShare() throws {
        let ledger = makeLedger(limit: 400_000, perPeer: 100_000)
        let attacker = RPCPeer.ip("127.0.0.1", port: 1)
        var holders: [EmbeddedChannel] = []
        for index in 0..<64 {
            // Loopback addresses are one peer, whichever of them it uses.
            let channel = try connect(ledger: ledger, peer: .ip("127.0.0.\(index + 1)", port: 1))
            try channel.writeInbound(header(announcing: 900_000))
            holders.append(channel)
        }
        XCTAssertLessThanOrEqual(ledger.charged(to: attacker), 64 * 1024, "what arrived is held, not what was announced")

        let first = holders[0]
        var sent = 0
        while first.isActive, sent < 900_000 {
            _ = try? first.writeInbound(ByteBuffer(repeating: UInt8(ascii: " "), count: 20_000))
            sent += 20_000
        }
        XCTAssertFalse(first.isActive, "a refused frame cannot be skipped: the connection is closed")
        XCTAssertLessThan(sent, 200_000, "refused at its own share, not at the whole")
        let refused = try replies(first)
        XCTAssertEqual(refused.first?["error"]?["code"], -32009)
        XCTAssertEqual(refused.first?["error"]?["message"], "Server busy")
        XCTAssertEqual(refused.first?["error"]?["data"]?["limit"], 100_000)
        XCTAssertEqual(statistics.framesOverBudget.value, 1)

        for (index, peer) in [RPCPeer.ip("192.0.2.7", port: 1), root].enumerated() {
            let other = try connect(ledger: ledger, peer: peer)
            try other.writeInbound(call(index))
            XCTAssertEqual(try replies(other).first?["id"]?.intValue, index, "\(peer) is served")
        }

        for channel in holders { _ = try? channel.close().wait() }
        loop.run()  // the pipeline's handlers are removed after the close
        XCTAssertEqual(ledger.charged(to: attacker), 0, "nothing stays charged after the peer leaves")
        XCTAssertEqual(statistics.budget.bufferedBytes, 0, "answered calls give their bytes back")
    }

    /// Peers together cannot take what is reserved for the administrators: root is served when every other
    /// peer has spent all it may.
    func testTheAdministratorsReserveIsRootsWhateverOthersHold() throws {
        let ledger = makeLedger(limit: 200_000, perPeer: 50_000)
        // Each holds a buffer of 32 KiB for the 20 000 bytes it sent of a 30 000-byte frame.
        let partFrame = { () -> ByteBuffer in
            var start = self.header(announcing: 30_000)
            start.writeBytes(Array(repeating: UInt8(ascii: " "), count: 20_000))
            return start
        }
        var holders: [EmbeddedChannel] = []
        for address in 1...8 {
            let channel = try connect(ledger: ledger, peer: .ip("192.0.2.\(address)", port: 1))
            _ = try? channel.writeInbound(partFrame())
            holders.append(channel)
        }
        XCTAssertEqual(holders.filter(\.isActive).count, 4, "all but the reserve is taken, by four of them")
        XCTAssertLessThanOrEqual(statistics.budget.bufferedBytes, 150_000)
        let user = try connect(ledger: ledger, peer: .unixSocket(.init(uid: 1000, gid: 1000, pid: 2)))
        _ = try? user.writeInbound(partFrame())
        XCTAssertFalse(user.isActive, "another user cannot reach into the reserve")
        let admin = try connect(ledger: ledger, peer: root)
        try admin.writeInbound(partFrame())
        XCTAssertTrue(admin.isActive, "root's frame fits in the reserve")
        for channel in holders + [admin] { _ = try? channel.close().wait() }
        loop.run()
        XCTAssertEqual(statistics.budget.bufferedBytes, 0)
    }

    func testATrickledFrameIsRefusedAtItsDeadline() throws {
        let channel = try connect(ledger: makeLedger(), frameTimeout: .seconds(30))
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
        XCTAssertEqual(statistics.budget.bufferedBytes, 0)
    }

    func testAFrameCompletedInTimeHasNoDeadlineLeft() throws {
        let channel = try connect(ledger: makeLedger(), frameTimeout: .seconds(5))
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
        let channel = try connect(ledger: makeLedger())
        let padding = String(repeating: "x", count: 100_000)
        var input = ByteBuffer()
        for id in 1...100 {
            input.writeLengthPrefixedFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","padding":"\#(padding)","params":[50],"id":\#(id)}"#)
        }
        try channel.writeInbound(input)
        XCTAssertLessThan(statistics.budget.bufferedBytes, 100 * 64, "params and id only, not the frames")
        loop.advanceTime(by: .milliseconds(50))
        XCTAssertEqual(try replies(channel).count, 100)
        XCTAssertEqual(statistics.budget.bufferedBytes, 0)
    }

    func testABatchRunsNoMoreEntriesAtOnceThanTheInFlightLimit() throws {
        let channel = try connect(ledger: makeLedger(), maxCalls: 2)
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
