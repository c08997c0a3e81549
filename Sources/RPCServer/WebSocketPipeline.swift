package import NIOCore
package import RPCCore
package import RPCLogging
import RPCProtocol

/// The handlers of a connection upgraded to WebSocket (`GET /rpc` on an HTTP listener), after the idle
/// handler and TLS, head to tail:
///
///     WebSocketFrameReceiver      bytes -> frames (`WebSocketReceivedFrame`), unmasked; refuses a frame by its
///                                 header; charges the frame still arriving; hands each frame on by a call
///                                 (as the message handler hands on messages), not a pipeline hop
///     WebSocketMessageHandler     text messages -> messages; ping, close codes (the receiver's refusals too),
///                                 charges; control frames
///     RPCConnectionHandler        a fresh one, with subscriptions and events; its output (`ChargedOutput`)
///                                 writes replies and events as text frames, coalesced per flush
///     ProtocolErrorHandler
///
/// No `WebSocketFrameEncoder`: rpcd writes its frames' bytes itself (`WebSocketFrameHeader`).
///
/// One function builds them so that the upgrade (`HTTPConnectionPipeline`), the `EmbeddedChannel` tests and
/// the micro-benchmark (bench/micro) use the same pipeline.
package enum WebSocketPipeline {
    package static func handlers(
        configuration: RPCServer.Configuration, router: RPCRouter, connection: RPCConnectionInfo,
        refusalLog: LogRateLimiter
    ) -> [any ChannelHandler] {
        let limits = configuration.limits
        let connectionHandler = RPCConnectionHandler(router: router, connection: connection, limits: limits, framing: .webSocket)
        let messageHandler = WebSocketMessageHandler(
            connection: connection, maxMessageSize: limits.maxFrameSize, statistics: router.statistics,
            refusalLog: refusalLog, handingMessagesTo: connectionHandler)
        return [
            WebSocketFrameReceiver(
                maxFrameSize: limits.maxFrameSize, account: connection.account, timeout: limits.frameTimeout,
                handingFramesTo: messageHandler),
            messageHandler,
            connectionHandler,
            ProtocolErrorHandler(connection: connection, statistics: router.statistics, refusalLog: refusalLog),
        ]
    }
}
