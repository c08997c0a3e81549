import NIOCore
import NIOHTTP1
import NIOWebSocket

/// NIO's WebSocket upgrade (`NIOWebSocketServerUpgrader`: the checks of the handshake and the
/// `Sec-WebSocket-Accept` of the 101 response), with rpcd's own handlers put in place after it by `pipeline`
/// (`WebSocketPipeline`): not NIO's `WebSocketFrameDecoder` (`WebSocketFrameReceiver` reads the frames) nor
/// its `WebSocketFrameEncoder`, which cannot be removed once added, since rpcd writes its frames' bytes itself
/// (one buffer per flush), nor NIO's
/// `WebSocketProtocolErrorHandler`, whose close codes `WebSocketMessageHandler` sends.
struct WebSocketUpgrader: HTTPServerProtocolUpgrader, Sendable {
    private let handshake: NIOWebSocketServerUpgrader
    private let pipeline: @Sendable (any Channel) throws -> Void

    /// `shouldUpgrade` as NIO's (nil: refused, the request goes on as a plain `GET`); `pipeline` adds the
    /// handlers that read and write frames, on the channel's loop.
    init(
        shouldUpgrade: @escaping @Sendable (any Channel, HTTPRequestHead) -> EventLoopFuture<HTTPHeaders?>,
        pipeline: @escaping @Sendable (any Channel) throws -> Void
    ) {
        // NIO's upgrader's frame size is its own decoder's, which is never added (`WebSocketPipeline` sets it).
        self.handshake = NIOWebSocketServerUpgrader(
            automaticErrorHandling: false, shouldUpgrade: shouldUpgrade,
            upgradePipelineHandler: { channel, _ in channel.eventLoop.makeSucceededVoidFuture() })
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
        return context.eventLoop.makeCompletedFuture { try pipeline(channel) }
    }
}
