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
/// An oversize frame is answered with a `Frame too large` error object (id null) before closing, because the
/// stream cannot be resynchronised after a refused length. Transport errors (reset by peer and the like) are
/// logged at debug level: they are the client's business, not the administrator's.
final class ProtocolErrorHandler: ChannelInboundHandler {
    typealias InboundIn = Never
    typealias OutboundOut = ByteBuffer

    private let connection: RPCConnectionInfo
    private let statistics: RPCStatistics

    init(connection: RPCConnectionInfo, statistics: RPCStatistics) {
        self.connection = connection
        self.statistics = statistics
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let tooLarge = error as? FrameTooLargeError {
            statistics.errors.increment()
            connection.logger.notice(
                "Refused oversize frame; closing connection",
                metadata: [LogField.errorCode: "\(RPCError.Code.frameTooLarge)", LogField.error: "\(tooLarge)"])
            var reply = context.channel.allocator.buffer(capacity: 128)
            RPCReplyWriter.writeError(
                .frameTooLarge(announced: tooLarge.announcedLength, limit: tooLarge.maxFrameSize), id: nil, into: &reply)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
        } else {
            connection.logger.debug("Connection error; closing", metadata: [LogField.error: "\(error)"])
            context.close(promise: nil)
        }
    }
}
