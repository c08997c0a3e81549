import Logging
import NIOCore
import RPCCore
import RPCLogging

/// Sits on a listening channel and enforces `MaxConnections=` across all listeners.
///
/// Each accepted connection is counted (the count is shared by every listener through `RPCStatistics`);
/// one past the limit is closed at once, before any byte is read, and counted as rejected.
/// Runs on the listening channel's event loop; the count is atomic because connections close on other loops.
final class ConnectionLimiter: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let maxConnections: Int
    private let statistics: RPCStatistics
    private let logger: Logger

    init(maxConnections: Int, statistics: RPCStatistics, logger: Logger) {
        self.maxConnections = maxConnections
        self.statistics = statistics
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let child = unwrapInboundIn(data)
        let open = statistics.openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        guard open <= maxConnections else {
            statistics.openConnections.increment(by: -1)
            statistics.rejectedConnections.increment()
            logger.warning(
                "Connection limit reached; refusing connection",
                metadata: [LogField.peer: "\(child.remoteAddress.map(\.peerDescription) ?? "unknown")",
                           LogField.limit: "\(maxConnections)"])
            child.close(promise: nil)
            return
        }
        statistics.acceptedConnections.increment()
        let statistics = self.statistics
        child.closeFuture.whenComplete { _ in statistics.openConnections.increment(by: -1) }
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
