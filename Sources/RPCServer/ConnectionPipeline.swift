package import NIOCore
package import RPCCore
package import RPCLogging
import RPCProtocol
import RPCWire

/// The handlers of one client connection, head to tail:
///
///     IdleTimeoutHandler          an idle event after IdleTimeout= without traffic (when configured)
///     FrameReceiver               bytes -> frame payloads; refuses a length above MaxFrameSize=, charges the
///                                 bytes it keeps to the peer's account (PeerLedger) and refuses one still
///                                 arriving FrameTimeout= after its length; hands each frame to the
///                                 connection handler by a call, not a pipeline hop
///     RPCConnectionHandler        payload -> router -> reply frame; event notifications; backpressure, turns,
///                                 output charged to the peer's account, idle and quiesce handling
///     ProtocolErrorHandler        answers a refused frame, logs and closes on errors
///
/// The two that write frame their payloads themselves (`LengthPrefixedFrameEncoder.write(_:framedTo:promise:)`)
/// instead of passing them through an encoder handler: idle connections are counted in thousands, and each
/// handler costs every one of them a handler and a context.
///
/// One function builds them so that the server, the `EmbeddedChannel` tests and the micro-benchmark
/// (bench/micro) use the same pipeline.
package enum ConnectionPipeline {
    package static func handlers(
        configuration: RPCServer.Configuration, router: RPCRouter, connection: RPCConnectionInfo,
        refusalLog: LogRateLimiter
    ) -> [any ChannelHandler] {
        var handlers: [any ChannelHandler] = []
        let limits = configuration.limits
        if let idle = limits.idleTimeout {
            handlers.append(IdleTimeoutHandler(timeout: idle))
        }
        let connectionHandler = RPCConnectionHandler(router: router, connection: connection, limits: limits)
        handlers.append(FrameReceiver(
            maxFrameSize: limits.maxFrameSize, account: connection.account, timeout: limits.frameTimeout,
            received: connection.listener?.received, handingFramesTo: connectionHandler))
        handlers.append(connectionHandler)
        handlers.append(ProtocolErrorHandler(connection: connection, statistics: router.statistics, refusalLog: refusalLog))
        return handlers
    }
}
