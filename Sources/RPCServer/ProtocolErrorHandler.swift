import JSONRPC
import Logging
import NIOCore
import RPCCore
import RPCLogging
import RPCProtocol
import RPCWire

/// The last inbound handler of a connection: turns errors into a final reply where the protocol allows one,
/// then closes.
///
/// A refused frame — longer than `MaxFrameSize=`, past `MaxBufferedBytes=`, or not complete within
/// `FrameTimeout=` — is answered with its error object (id null) before closing, because the stream cannot be
/// resynchronised once a frame is skipped; `RPCConnectionHandler` passes it on only once the calls read before
/// it are answered. These refusals are logged at notice, at a limited rate shared by
/// every connection (a flood of them is one attack, not thousands of events). Transport errors (reset by peer
/// and the like) are logged at debug level: they are the client's business, not the administrator's.
final class ProtocolErrorHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Never

    private let connection: RPCConnectionInfo
    private let statistics: RPCStatistics
    private let refusalLog: LogRateLimiter
    private var closing = false

    init(connection: RPCConnectionInfo, statistics: RPCStatistics, refusalLog: LogRateLimiter) {
        self.connection = connection
        self.statistics = statistics
        self.refusalLog = refusalLog
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        closing = true
        guard let (reply, message) = Self.finalReply(for: error) else {
            connection.logger.debug("Connection error; closing", metadata: [LogField.error: "\(error)"])
            context.close(promise: nil)
            return
        }
        Self.record(
            message, code: reply.code, error: error, refusal: Self.refusal(error),
            connection: connection, statistics: statistics, refusalLog: refusalLog)
        var buffer = context.channel.allocator.buffer(capacity: 128)
        RPCReplyWriter.writeError(reply, id: nil, into: &buffer)
        let channel = context.channel
        let written = context.eventLoop.makePromise(of: Void.self)
        LengthPrefixedFrameEncoder.write(buffer, framedTo: context, promise: written)
        context.flush()
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }

    /// Counts and logs a refused message the way every transport does (framed, HTTP, WebSocket): answered with
    /// an error, so counted as a call and an error (errors never pass calls); a refusal by the limits also as a
    /// refused frame; logged at notice at the shared limited rate.
    static func record(
        _ message: Logger.Message, code: Int, error: any Error, refusal: RPCStatistics.FrameRefusal?,
        connection: RPCConnectionInfo, statistics: RPCStatistics, refusalLog: LogRateLimiter
    ) {
        // Answered with an error, so counted as a message that is no call (a fixed label), and by its reason.
        statistics.metrics.invalidMessage.failed(code: code, after: nil)
        if let refusal { statistics.frameRefused(refusal) }
        if let suppressed = refusalLog.admit() {
            var metadata: Logger.Metadata = [LogField.errorCode: "\(code)", LogField.error: "\(error)"]
            if suppressed > 0 { metadata[LogField.suppressed] = "\(suppressed)" }
            connection.logger.notice(message, metadata: metadata)
        }
    }

    /// Whether `error` is a refused frame, after which nothing more of the connection is read as frames.
    static func endsTheStream(_ error: any Error) -> Bool {
        refusal(error) != nil
    }

    /// Why a frame was refused, for `rpcd_frames_refused_total`.
    private static func refusal(_ error: any Error) -> RPCStatistics.FrameRefusal? {
        switch error {
        case is FrameTooLargeError: .tooLarge
        case is BufferBudgetExceeded: .overBudget
        case is FrameTimedOut: .timedOut
        default: nil
        }
    }

    /// The error object that answers a refused frame, and the log message, for the errors that have one.
    private static func finalReply(for error: any Error) -> (RPCError, Logger.Message)? {
        switch error {
        case let tooLarge as FrameTooLargeError:
            return (.frameTooLarge(announced: tooLarge.announcedLength, limit: tooLarge.maxFrameSize),
                    tooLarge.looksLikeTLS
                        ? "Refused a TLS handshake on a plain listener (clients of tls:// listeners need their port); closing connection"
                        : "Refused oversize frame; closing connection")
        case let busy as BufferBudgetExceeded:
            return (.serverBusy(limit: busy.limit),
                    "Refused frame: the peer's share of MaxBufferedBytesPerPeer= or MaxBufferedBytes= is spent; closing connection")
        case let timedOut as FrameTimedOut:
            return (.frameTimeout(seconds: Int(timedOut.timeout.components.seconds)),
                    "Frame not complete within FrameTimeout=; closing connection")
        default:
            return nil
        }
    }
}
