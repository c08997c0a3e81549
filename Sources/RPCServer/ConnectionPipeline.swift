import NIOCore
import NIOExtras
import RPCCore
import RPCWire

/// The handlers of one client connection, head to tail:
///
///     IdleStateHandler            fires an idle event after IdleTimeout= without traffic (when configured)
///     LengthPrefixedFrameDecoder  bytes -> frame payloads; refuses oversize lengths
///     LengthPrefixedFrameEncoder  reply payloads -> frames
///     RPCConnectionHandler        payload -> router -> reply; backpressure, idle and quiesce handling
///     ProtocolErrorHandler        answers an oversize frame, logs and closes on errors
///
/// One function builds them so that the server and the `EmbeddedChannel` tests use the same pipeline.
enum ConnectionPipeline {
    static func handlers(
        configuration: RPCServer.Configuration, router: RPCRouter, connection: RPCConnectionInfo
    ) -> [any ChannelHandler] {
        var handlers: [any ChannelHandler] = []
        if let idle = configuration.idleTimeout {
            handlers.append(IdleStateHandler(allTimeout: TimeAmount(idle)))
        }
        handlers.append(ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: configuration.maxFrameSize)))
        handlers.append(LengthPrefixedFrameEncoder())
        handlers.append(
            RPCConnectionHandler(
                router: router, connection: connection, maxCallsInFlight: configuration.maxCallsPerConnection))
        handlers.append(ProtocolErrorHandler(connection: connection, statistics: router.statistics))
        return handlers
    }
}
