import Logging
import NIOCore
import NIOWebSocket
import RPCCore
import RPCLogging
import RPCProtocol
import RPCWire

/// Turns the WebSocket frames of an upgraded HTTP connection into JSON-RPC messages for
/// `RPCConnectionHandler`, and its replies and events into text frames (docs/PROTOCOL.md §9, "WebSocket"):
///
///     text message (one frame, or fragments)   one JSON-RPC message or batch, UTF-8
///     text message from rpcd                   one reply, or one rpc.event notification
///     ping -> pong (same data); pong ignored; close -> close (same code) and the connection ends
///
/// Frames arrive whole, as their bytes, their payloads unmasked (`WebSocketFrameReceiver` unmasks them as
/// they pass, and reports unmasked ones, refused here). A message is charged to the peer's account as its
/// fragments arrive and handed on charged its length, as a frame is (`FrameReceiver`); `RPCConnectionHandler`
/// gives it back once answered.
/// The frame still arriving is charged before it (`WebSocketFrameReceiver`), which reports a
/// refusal here. Refusals end the connection with a close frame saying why:
///
///     1003  a binary message (JSON-RPC is text)
///     1009  a message longer than MaxFrameSize= (the receiver refuses a single frame that long by its header)
///     1008  the peer's share of MaxBufferedBytesPerPeer= or MaxBufferedBytes= is spent, or a message did not
///           arrive whole within FrameTimeout= of its first byte
///     1001  the server is stopping, or the connection was idle for IdleTimeout=
///     1002  a protocol error: an unmasked frame, fragments out of order, a malformed control frame
///
/// Closing from behind (the connection handler's idle and shutdown closes) sends the close frame first,
/// in `close(context:mode:promise:)`, so every end a client sees has its code. The receiver's refusals (a
/// frame past MaxFrameSize=, a malformed control frame) are answered here too, with the close code NIO's
/// `WebSocketProtocolErrorHandler` would send.
///
/// Replies and events reach it as text frames already (`RPCConnectionHandler`'s output writes them,
/// `OutputFraming.webSocket`) and pass through; after a close frame is sent nothing more is (RFC 6455 §5.5.1),
/// their writes fail. Its own frames (pong, close) it writes the same way (`WebSocketFrameHeader`): one
/// buffer, header and payload, unmasked as a server's are (RFC 6455 §5.2), charged to the peer until the
/// socket takes it.
///
/// Event-loop confined.
final class WebSocketMessageHandler: ChannelDuplexHandler {
    /// One whole frame, its payload unmasked (`WebSocketFrameReceiver`).
    typealias InboundIn = WebSocketReceivedFrame
    typealias InboundOut = ByteBuffer
    /// Frames, header and payload.
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State {
        case open
        /// A fragmented text message is arriving.
        case assembling(ByteBuffer)
        /// A close frame was sent; nothing more is read.
        case closing
    }

    private let connection: RPCConnectionInfo
    private let maxMessageSize: Int
    private let statistics: RPCStatistics
    private let refusalLog: LogRateLimiter
    private var state = State.open
    /// What the message being assembled holds of the account.
    private var charged = 0

    /// The next handler, which messages are handed to directly (as `FrameReceiver` hands it frames); nil: they
    /// are fired through the pipeline.
    private let connectionHandler: RPCConnectionHandler?
    private var context: ChannelHandlerContext?

    init(
        connection: RPCConnectionInfo, maxMessageSize: Int, statistics: RPCStatistics, refusalLog: LogRateLimiter,
        handingMessagesTo connectionHandler: RPCConnectionHandler? = nil
    ) {
        self.connectionHandler = connectionHandler
        self.connection = connection
        self.maxMessageSize = maxMessageSize
        self.statistics = statistics
        self.refusalLog = refusalLog
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        release()
        state = .closing
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        frameArrived(unwrapInboundIn(data), context: context)
    }

    /// One whole frame, handed on by `WebSocketFrameReceiver` directly; dropped after the handler is removed.
    func frameArrived(_ frame: WebSocketReceivedFrame) {
        guard let context else { return }
        frameArrived(frame, context: context)
    }

    private func frameArrived(_ frame: WebSocketReceivedFrame, context: ChannelHandlerContext) {
        let payload = frame.payload
        switch (WebSocketOpcode(encodedWebSocketOpcode: frame.opcode)!, state) {
        case (_, .closing):
            return
        case (.text, .open) where frame.fin:
            deliver(payload, context: context)
        case (.text, .open):
            var message = context.channel.allocator.buffer(capacity: payload.readableBytes)
            message.writeImmutableBuffer(payload)
            state = .assembling(message)
            charge(message.capacity, context: context)
        case (.continuation, .assembling(var message)):
            state = .open  // the buffer is ours alone while it grows
            guard message.readableBytes + payload.readableBytes <= maxMessageSize else {
                return refuse(
                    .messageTooLarge, .frameTooLarge(announced: message.readableBytes + payload.readableBytes, limit: maxMessageSize),
                    "Refused oversize WebSocket message; closing connection", refusal: nil, context: context)
            }
            message.writeImmutableBuffer(payload)
            if frame.fin {
                release()
                deliver(message, context: context)
            } else {
                state = .assembling(message)
                charge(message.capacity, context: context)
            }
        case (.binary, _):
            refuse(
                .unacceptableData, .invalidRequest("JSON-RPC messages are text frames"),
                "Refused binary WebSocket message; closing connection", refusal: nil, context: context)
        case (.ping, _):
            writeFrame(.pong, payload, context: context)
        case (.pong, _):
            return
        case (.connectionClose, _):
            // The client ends: answer with its code, as RFC 6455 §5.5.1 asks, and close.
            var data = payload
            let code = data.readWebSocketErrorCode() ?? .normalClosure
            sendClose(code, context: context)
        default:
            // A continuation without a start, or a new message inside a fragmented one.
            refuse(
                .protocolError, .invalidRequest("WebSocket fragments out of order"),
                "Refused WebSocket message: fragments out of order; closing connection", refusal: nil, context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is WebSocketInputRefused else { return context.fireUserInboundEventTriggered(event) }
        refuseOverBudget(context: context)
    }

    /// Text frames of `RPCConnectionHandler` (replies, events), unless a close frame has been sent.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .closing = state else { return context.write(data, promise: promise) }
        promise?.fail(ChannelError.outputClosed)
    }

    /// The receiver refuses a frame by its header (as NIO's decoder would, with its errors): answered with
    /// the close code NIO's error handler would send. An unmasked frame, and a message past `FrameTimeout=`,
    /// are refused here, with their log lines.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? WebSocketUnmaskedFrame {
            return refuse(
                .protocolError, .invalidRequest(error.description), "Refused unmasked WebSocket frame; closing connection",
                refusal: nil, context: context)
        }
        if let error = error as? FrameTimedOut {
            return refuse(
                .policyViolation, .frameTimeout(seconds: Int(error.timeout.components.seconds)),
                "WebSocket message not complete within FrameTimeout=; closing connection", refusal: .timedOut, context: context)
        }
        if let error = error as? NIOWebSocketError {
            switch error {
            case .invalidFrameLength: sendClose(.messageTooLarge, context: context)
            case .fragmentedControlFrame, .multiByteControlFrameLength: sendClose(.protocolError, context: context)
            }
        }
        context.fireErrorCaught(error)
    }

    /// Writes one whole frame of its own and flushes it, charged to the peer until the socket takes it, as
    /// `ChargedOutput` charges replies: pongs to a peer that pings and never reads would pile up otherwise. A
    /// pong the peer's share cannot cover ends the connection (1008); a close frame, the connection's last
    /// (2 to 4 bytes of payload), is charged whatever the share says. Returns when the socket has taken it.
    @discardableResult
    private func writeFrame(_ opcode: WebSocketOpcode, _ payload: ByteBuffer, context: ChannelHandlerContext) -> EventLoopFuture<Void>? {
        var frame = context.channel.allocator.buffer(capacity: WebSocketFrameHeader.maximumSize + payload.readableBytes)
        frame.writeWebSocketFrame(opcode, payload)
        let bytes = frame.readableBytes
        let account = connection.account
        if opcode == .connectionClose {
            account.forceCharge(bytes)
        } else if !account.charge(bytes) {
            refuseOverBudget(context: context)
            return nil
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { _ in account.release(bytes) }
        context.writeAndFlush(wrapOutboundOut(frame), promise: written)
        return written.futureResult
    }

    /// A close from behind (idle, shutdown, a reply the account could not cover) says so with 1001 first.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .all, case .closing = state {} else if mode == .all {
            state = .closing
            var data = context.channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: .goingAway)
            writeFrame(.connectionClose, data, context: context)
        }
        context.close(mode: mode, promise: promise)
    }

    private func deliver(_ message: ByteBuffer, context: ChannelHandlerContext) {
        guard connection.account.charge(message.readableBytes) else { return refuseOverBudget(context: context) }
        if let connectionHandler {
            connectionHandler.frameArrived(message)
        } else {
            context.fireChannelRead(wrapInboundOut(message))
        }
    }

    private func charge(_ holding: Int, context: ChannelHandlerContext) {
        if holding > charged {
            guard connection.account.charge(holding - charged) else { return refuseOverBudget(context: context) }
        } else {
            connection.account.release(charged - holding)
        }
        charged = holding
    }

    /// A message, or the frame arriving (`WebSocketFrameReceiver`), would pass the peer's share: 1008.
    private func refuseOverBudget(context: ChannelHandlerContext) {
        refuse(
            .policyViolation, .serverBusy(limit: connection.account.shareLimit),
            "Refused WebSocket message: the peer's share of MaxBufferedBytesPerPeer= or MaxBufferedBytes= is spent; closing connection",
            refusal: .overBudget, context: context)
    }

    private func release() {
        connection.account.release(charged)
        charged = 0
    }

    private func refuse(
        _ code: WebSocketErrorCode, _ error: RPCError, _ log: Logger.Message, refusal: RPCStatistics.FrameRefusal?,
        context: ChannelHandlerContext
    ) {
        release()
        ProtocolErrorHandler.record(
            log, code: error.code, error: WebSocketRefusal(code: code, error: error), refusal: refusal,
            connection: connection, statistics: statistics, refusalLog: refusalLog)
        sendClose(code, context: context)
    }

    private func sendClose(_ code: WebSocketErrorCode, context: ChannelHandlerContext) {
        guard case .closing = state else {
            state = .closing
            var data = context.channel.allocator.buffer(capacity: 2)
            data.write(webSocketErrorCode: code)
            let channel = context.channel
            writeFrame(.connectionClose, data, context: context)?.whenComplete { _ in channel.close(promise: nil) }
            return
        }
    }
}

/// A WebSocket message refused with a close code, for the log.
struct WebSocketRefusal: Error, CustomStringConvertible {
    var code: WebSocketErrorCode
    var error: RPCError
    var description: String { "close \(UInt16(webSocketErrorCode: code)): \(error)" }
}
