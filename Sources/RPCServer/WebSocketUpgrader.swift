import NIOCore
import NIOHTTP1
import NIOWebSocket

/// NIO's WebSocket upgrade (`NIOWebSocketServerUpgrader`: the checks of the handshake and the
/// `Sec-WebSocket-Accept` of the 101 response), with rpcd's own handlers put in place after it: NIO's frame
/// decoder and `pipeline`'s handlers, without NIO's `WebSocketFrameEncoder`, which cannot be removed once
/// added, since `WebSocketMessageHandler` writes its frames itself (one buffer per flush), nor NIO's
/// `WebSocketProtocolErrorHandler`, whose close codes `WebSocketMessageHandler` sends.
struct WebSocketUpgrader: HTTPServerProtocolUpgrader, Sendable {
    private let handshake: NIOWebSocketServerUpgrader
    private let maxFrameSize: Int
    private let pipeline: @Sendable (any Channel) throws -> Void

    /// `shouldUpgrade` as NIO's (nil: refused, the request goes on as a plain `GET`); `pipeline` adds the
    /// handlers behind the frame decoder, on the channel's loop.
    init(
        maxFrameSize: Int, shouldUpgrade: @escaping @Sendable (any Channel, HTTPRequestHead) -> EventLoopFuture<HTTPHeaders?>,
        pipeline: @escaping @Sendable (any Channel) throws -> Void
    ) {
        self.handshake = NIOWebSocketServerUpgrader(
            maxFrameSize: maxFrameSize, automaticErrorHandling: false, shouldUpgrade: shouldUpgrade,
            upgradePipelineHandler: { channel, _ in channel.eventLoop.makeSucceededVoidFuture() })
        self.maxFrameSize = maxFrameSize
        self.pipeline = pipeline
    }

    var supportedProtocol: String { handshake.supportedProtocol }
    var requiredUpgradeHeaders: [String] { handshake.requiredUpgradeHeaders }

    func buildUpgradeResponse(
        channel: any Channel, upgradeRequest: HTTPRequestHead, initialResponseHeaders: HTTPHeaders
    ) -> EventLoopFuture<HTTPHeaders> {
        handshake.buildUpgradeResponse(channel: channel, upgradeRequest: upgradeRequest, initialResponseHeaders: initialResponseHeaders)
    }

    func upgrade(context: ChannelHandlerContext, upgradeRequest: HTTPRequestHead) -> EventLoopFuture<Void> {
        let channel = context.channel
        return context.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameSize)))
            try pipeline(channel)
        }
    }
}
