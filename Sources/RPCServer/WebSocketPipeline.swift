import NIOCore
import NIOWebSocket
import RPCCore
import RPCLogging
import RPCProtocol

/// The handlers of a connection upgraded to WebSocket (`GET /rpc` on an HTTP listener), after the idle
/// handler and TLS, head to tail:
///
///     WebSocketInputCharge        charges the frame still arriving, which the decoder holds
///     WebSocketFrameDecoder       NIOWebSocket
///     WebSocketMessageHandler     text messages -> messages; ping, close codes (NIO's decoder's errors too),
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
        return [
            // The frame still arriving, in the decoder's buffer, is the peer's to pay for.
            WebSocketInputCharge(account: connection.account),
            // A control frame may carry 125 bytes whatever MaxFrameSize= says (RFC 6455 §5.5).
            ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: max(limits.maxFrameSize, 125))),
            WebSocketMessageHandler(
                connection: connection, maxMessageSize: limits.maxFrameSize, statistics: router.statistics,
                refusalLog: refusalLog),
            RPCConnectionHandler(router: router, connection: connection, limits: limits, framing: .webSocket),
            ProtocolErrorHandler(connection: connection, statistics: router.statistics, refusalLog: refusalLog),
        ]
    }
}
