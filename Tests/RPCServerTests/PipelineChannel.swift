import Logging
import NIOCore
import NIOEmbedded
import RPCCore
import RPCLogging
@testable import RPCServer
import RPCTestSupport
import RPCWire
import XCTest

/// An `EmbeddedChannel` with exactly the per-connection pipeline the server installs, connected, for tests
/// that drive it with frames.
enum PipelineChannel {
    /// `first` (a probe, say) goes in before the server's handlers. The connection (of `peer`)'s account is
    /// opened in `ledger` (by default one of its own with the configuration's limits) and closed with the channel.
    /// With `webSocket`, the handlers of a connection upgraded to WebSocket (`WebSocketPipeline`) instead.
    static func make(
        configuration: RPCServer.Configuration, router: RPCRouter, ledger: PeerLedger? = nil, first: (any ChannelHandler)? = nil,
        peer: RPCPeer = .unixSocket(), webSocket: Bool = false
    ) throws -> EmbeddedChannel {
        let ledger = ledger ?? PeerLedger(limits: configuration.limits, administrators: RPCPeerSet([]), statistics: router.statistics)
        let account = try XCTUnwrap(ledger.open(peer))
        let connection = RPCConnectionInfo(id: 1, peer: peer, logger: Logger(label: "test"), account: account)
        let channel = EmbeddedChannel()
        channel.closeFuture.whenComplete { _ in account.close() }
        if let first { try channel.pipeline.syncOperations.addHandler(first) }
        let handlers = webSocket ? WebSocketPipeline.handlers : ConnectionPipeline.handlers
        try channel.pipeline.syncOperations.addHandlers(
            handlers(configuration, router, connection, LogRateLimiter(burst: 10, per: .seconds(1))))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    /// Every frame `channel` wrote so far, as text (the encoder may write length and payload as two buffers).
    static func writtenFrames(_ channel: EmbeddedChannel, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        var bytes = ByteBuffer()
        while var part = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&part) }
        let frames = WireFrame.payloads(in: &bytes)
        XCTAssertEqual(bytes.readableBytes, 0, "no partial frame", file: file, line: line)
        return frames
    }
}
