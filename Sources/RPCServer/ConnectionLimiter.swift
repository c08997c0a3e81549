import Logging
import NIOCore
import RPCCore
import RPCLogging
import RPCMetrics
import RPCProtocol

/// Sits on a listening channel and enforces `MaxConnections=` across all listeners.
///
/// Each accepted connection is counted (the count is shared by every listener through `RPCStatistics`);
/// one past the limit is closed at once, before any byte is read, and counted as rejected. TCP peers may only
/// use `MaxConnections=` minus `RPCLimits.localConnectionReserve`: the rest is kept for the Unix socket, so that
/// a flood from the network never locks local administrators out. (`MaxConnectionsPerPeer=` is enforced once
/// the peer is known, in `RPCServer`.)
/// Runs on the listening channel's event loop; the count is atomic because connections close on other loops.
final class ConnectionLimiter: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let maxConnections: Int
    private let statistics: RPCStatistics
    /// The listener's series: accepted, open and refused connections.
    private let listener: RPCListenerMetrics
    private let logger: Logger
    private let log: LogRateLimiter

    init(maxConnections: Int, statistics: RPCStatistics, listener: RPCListenerMetrics, logger: Logger, log: LogRateLimiter) {
        self.maxConnections = maxConnections
        self.statistics = statistics
        self.listener = listener
        self.logger = logger
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let child = unwrapInboundIn(data)
        var limit = maxConnections
        if case .unixDomainSocket? = child.remoteAddress {} else {
            limit -= RPCLimits.localConnectionReserve(maxConnections: maxConnections)
        }
        let open = statistics.openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        guard open <= limit else {
            statistics.openConnections.increment(by: -1)
            listener.refused(.limit)
            if let suppressed = log.admit() {
                var metadata: Logger.Metadata = [
                    LogField.peer: "\(child.remoteAddress.map(\.peerDescription) ?? "unknown")", LogField.limit: "\(limit)",
                ]
                if suppressed > 0 { metadata[LogField.suppressed] = "\(suppressed)" }
                logger.warning("Connection limit reached; refusing connection", metadata: metadata)
            }
            child.close(promise: nil)
            return
        }
        listener.accepted.increment()
        listener.connections.increment()
        let statistics = self.statistics
        let listenerOpen = listener.connections
        child.closeFuture.whenComplete { _ in
            statistics.openConnections.increment(by: -1)
            listenerOpen.decrement()
        }
        context.fireChannelRead(data)
    }

    /// Errors on a listening channel: accept failures (EMFILE, ...) and connections that could not be set up,
    /// which NIO closes and reports here. Logged, never fatal: the listener keeps accepting.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.warning("Accepting a connection failed", metadata: [LogField.error: "\(error)"])
    }
}

extension SocketAddress {
    /// How a peer appears in logs: `ADDRESS:PORT` (`[ADDRESS]:PORT` for IPv6), `unix` for Unix-domain peers,
    /// which have no name.
    var peerDescription: String {
        switch self {
        case .v4: return "\(ipAddress ?? "?"):\(port ?? 0)"
        case .v6: return "[\(ipAddress ?? "?")]:\(port ?? 0)"
        case .unixDomainSocket: return "unix"
        }
    }
}
