import JSONRPC
import NIOCore
import RPCProtocol
import Synchronization

/// Tells an HTTP client (`http://`, `http+unix:`) whose connection a limit refused (`MaxConnectionsPerPeer=`,
/// the administrators' reserve of `MaxConnections=`) why, instead of a reset: a `503` with `Retry-After` and a
/// JSON-RPC error, written before its request is read, as the only thing on the connection.
///
///     HTTP/1.1 503 Service Unavailable
///     content-type: application/json
///     content-length: N
///     retry-after: 1
///     connection: close
///
///     {"jsonrpc":"2.0","error":{"code":-32009,"message":"Server busy","data":{"limit":L}},"id":null}
///
/// Closing at once after the answer would make the kernel reset the connection when the client's request
/// arrives after the close, and a reset can make the client drop the answer unread. So the answer is followed
/// by a close of the output only, and what the client sends is read and dropped until it closes too, or for
/// `linger` at most (nginx's "lingering close"). Such connections are not counted against any peer: at most
/// `maxLingering` linger at once, all listeners together; past that one is closed after its answer at once.
/// `https://` connections are refused before their TLS handshake, so they are closed without an answer.
/// Event-loop confined (the count of lingering connections is shared, behind a lock).
final class HTTPConnectionRefusal: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private static let lingering = Mutex(0)
    static let maxLingering = 64
    static let linger = TimeAmount.seconds(1)

    private let limit: Int
    private var answered = false
    private var lingers = false
    private var timer: Scheduled<Void>?

    /// `limit`: the value of the limit that refused the connection, for the error's `data`.
    init(limit: Int) {
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context: context)
    }

    /// What the client sent (its request): read and dropped.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelInactive(context: ChannelHandlerContext) {
        stopLingering()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client closed its side: it has read the answer, or will not.
        if case ChannelEvent.inputClosed = event { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func answer(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        var body = ByteBuffer()
        RPCReplyWriter.writeError(.serverBusy(limit: limit), id: nil, into: &body)
        var response = context.channel.allocator.buffer(capacity: 160 + body.readableBytes)
        response.writeString(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: \(body.readableBytes)\r\n"
                + "retry-after: 1\r\nconnection: close\r\n\r\n")
        response.writeBuffer(&body)
        lingers = Self.lingering.withLock { count in
            guard count < Self.maxLingering else { return false }
            count += 1
            return true
        }
        let channel = context.channel
        let lingers = self.lingers
        context.writeAndFlush(NIOAny(response)).whenComplete { result in
            guard lingers, case .success = result else { return channel.close(promise: nil) }
            channel.close(mode: .output, promise: nil)
        }
        if lingers {
            timer = context.eventLoop.scheduleTask(in: Self.linger) { channel.close(promise: nil) }
        }
    }

    private func stopLingering() {
        timer?.cancel()
        timer = nil
        guard lingers else { return }
        lingers = false
        Self.lingering.withLock { $0 -= 1 }
    }
}
