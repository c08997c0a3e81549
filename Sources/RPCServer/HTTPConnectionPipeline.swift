import NIOCore
import NIOHTTP1
import NIOWebSocket
import RPCCore
import RPCLogging
import RPCProtocol

/// The handlers of one connection to an HTTP listener (`http://`, `https://`, `http+unix:`), head to tail,
/// after TLS when there is TLS:
///
///     IdleTimeoutHandler          as on framed connections
///     InputTurnHandler            what a read brings, handed on a turn of the loop at a time (NIO's parsers
///                                 below decode all they are handed at once)
///     HTTPHeadDeadline            FrameTimeout= and the peer's charge for a request head still arriving
///     HTTPResponseEncoder, HTTPRequestDecoder, HTTPServerPipelineHandler,
///     HTTPServerUpgradeHandler    NIOHTTP1: parsing, one request at a time in order, and NIOWebSocket's
///                                 upgrader for `GET /rpc` as the first request
///     HTTPParseErrorAnswer        400 with a JSON-RPC error for what does not parse (NIO's own has no body)
///     HTTPRequestHandler          requests -> messages, replies -> responses; Host/Origin/Content-Type
///                                 checks, body limits and charges, `HTTPResource`s
///     RPCConnectionHandler        the framed connections' dispatcher, writing one payload per message
///     ProtocolErrorHandler        logs and closes on errors
///
/// A WebSocket upgrade replaces everything after the input's turns (`HTTPHeadDeadline` too: `WebSocketFrameReceiver`
/// keeps the time and the charge of what arrives from then on) with `WebSocketPipeline`'s handlers. NIO's
/// upgrader appends its handlers at the end of the pipeline, so the handlers behind it are replaced rather
/// than kept: nothing is in flight at that point (the upgrade request is the connection's first).
/// `WebSocketUpgrader` does NIO's handshake only.
///
/// Why NIO's own HTTP and WebSocket rather than Hummingbird: the same pipeline, accounts, limits and turns as
/// framed connections, no new package, and a connection that costs a handful of handlers (docs/ARCHITECTURE.md).
enum HTTPConnectionPipeline {
    struct Context: Sendable {
        var configuration: RPCServer.Configuration
        var router: RPCRouter
        var connection: RPCConnectionInfo
        var refusalLog: LogRateLimiter
        var policy: HTTPRequestPolicy
    }

    /// Adds the handlers to `channel`'s pipeline; on its loop.
    static func addHandlers(to channel: any Channel, _ setup: Context) throws {
        let limits = setup.configuration.limits
        let operations = channel.pipeline.syncOperations
        if let idle = limits.idleTimeout {
            try operations.addHandler(IdleTimeoutHandler(timeout: idle))
        }
        try operations.addHandler(InputTurnHandler())
        let headDeadline = HTTPHeadDeadline(
            connection: setup.connection, timeout: limits.frameTimeout, statistics: setup.router.statistics,
            refusalLog: setup.refusalLog)
        try operations.addHandler(headDeadline)
        let upgrader = WebSocketUpgrader(
            shouldUpgrade: { channel, head in
                let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                // A refused upgrade goes on as a plain GET, which HTTPRequestHandler answers with the reason.
                guard path == HTTPSettings.rpcPath, setup.policy.check(head).refusal == nil else {
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                return channel.eventLoop.makeSucceededFuture(HTTPHeaders())
            },
            pipeline: { channel in try upgradeToWebSocket(channel, setup) })
        try operations.configureHTTPServerPipeline(
            withPipeliningAssistance: true, withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }),
            withErrorHandling: false)
        try operations.addHandlers(
            HTTPParseErrorAnswer(),
            HTTPRequestHandler(
                connection: setup.connection, limits: limits, policy: setup.policy,
                resources: setup.configuration.httpResources, router: setup.router, refusalLog: setup.refusalLog,
                headDeadline: headDeadline),
            RPCConnectionHandler(
                router: setup.router, connection: setup.connection, limits: limits, framing: .messages, eventsAllowed: false),
            ProtocolErrorHandler(connection: setup.connection, statistics: setup.router.statistics, refusalLog: setup.refusalLog))
    }

    private static func upgradeToWebSocket(_ channel: any Channel, _ setup: Context) throws {
        let operations = channel.pipeline.syncOperations
        try operations.removeHandler(context: operations.context(handlerType: HTTPHeadDeadline.self), promise: nil)
        try operations.removeHandler(context: operations.context(handlerType: HTTPParseErrorAnswer.self), promise: nil)
        try operations.removeHandler(context: operations.context(handlerType: HTTPRequestHandler.self), promise: nil)
        try operations.removeHandler(context: operations.context(handlerType: RPCConnectionHandler.self), promise: nil)
        try operations.removeHandler(context: operations.context(handlerType: ProtocolErrorHandler.self), promise: nil)
        try operations.addHandlers(WebSocketPipeline.handlers(
            configuration: setup.configuration, router: setup.router, connection: setup.connection, refusalLog: setup.refusalLog))
        if setup.connection.baseLogger.logLevel <= .debug { setup.connection.logger.debug("Connection upgraded to WebSocket") }
    }
}
