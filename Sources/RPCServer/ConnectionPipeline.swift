import NIOCore
import RPCCore
import RPCLogging
import RPCWire

/// The handlers of one client connection, head to tail:
///
///     IdleTimeoutHandler          an idle event after IdleTimeout= without traffic (when configured)
///     LengthPrefixedFrameDecoder  bytes -> frame payloads; refuses oversize lengths
///     FrameAdmissionHandler       charges each frame to MaxBufferedBytes= (shared by all connections) and
///                                 refuses one still arriving FrameTimeout= after its length
///     LengthPrefixedFrameEncoder  reply payloads -> frames
///     RPCConnectionHandler        payload -> router -> reply; event notifications; backpressure, idle and
///                                 quiesce handling
///     ProtocolErrorHandler        answers a refused frame, logs and closes on errors
///
/// One function builds them so that the server and the `EmbeddedChannel` tests use the same pipeline.
enum ConnectionPipeline {
    static func handlers(
        configuration: RPCServer.Configuration, router: RPCRouter, connection: RPCConnectionInfo,
        budget: InboundByteBudget, refusalLog: LogRateLimiter
    ) -> [any ChannelHandler] {
        var handlers: [any ChannelHandler] = []
        if let idle = configuration.idleTimeout {
            handlers.append(IdleTimeoutHandler(timeout: idle))
        }
        handlers.append(ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: configuration.maxFrameSize)))
        handlers.append(FrameAdmissionHandler(budget: budget, timeout: configuration.frameTimeout))
        handlers.append(LengthPrefixedFrameEncoder())
        handlers.append(
            RPCConnectionHandler(
                router: router, connection: connection, maxCallsInFlight: configuration.maxCallsPerConnection,
                budget: budget, maxSubscriptions: configuration.maxSubscriptionsPerConnection,
                maxQueuedEvents: configuration.maxQueuedEvents))
        handlers.append(ProtocolErrorHandler(connection: connection, statistics: router.statistics, refusalLog: refusalLog))
        return handlers
    }
}
