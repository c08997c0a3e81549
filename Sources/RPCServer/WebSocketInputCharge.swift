import NIOCore
import RPCCore

/// Charges the peer's account for the WebSocket frame still arriving, which NIO's `WebSocketFrameDecoder` (the
/// handler after this one) keeps in its buffer until the frame is whole: without it, a peer could make rpcd
/// hold a frame of up to `MaxFrameSize=` on every connection it opens, none of it charged.
///
/// It follows the frame headers as the bytes pass (`WebSocketFrameScanner`), so it knows which bytes belong
/// to a frame the decoder will hand on in this read and which to the frame still arriving. The frame still
/// arriving is charged what has arrived of it (header and payload), never the length it announces, and given
/// back as soon as it is whole, before the decoder hands it to `WebSocketMessageHandler`, which charges the
/// message from then on. A charge the account refuses stops the input here and tells the message handler
/// (`WebSocketInputRefused`), which closes with 1008 as for a message over the share.
///
/// Since it reads every header anyway, it also unmasks the payloads as they pass, in one copy of the read: the
/// frames NIO's decoder hands on carry their payload unmasked already (`WebSocketFrame.data`; their `maskKey`
/// still says whether the client masked them). Event-loop confined.
final class WebSocketInputCharge: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let account: PeerAccount
    private var scanner = WebSocketFrameScanner()
    /// What is charged for the frame still arriving.
    private var charged = 0
    private var refused = false

    init(account: PeerAccount) {
        self.account = account
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        // The channel still holds the read: unmasking writes into a copy of its readable bytes, one per read
        // (mutating the read itself would copy its whole storage, however little of it was read into).
        let read = unwrapInboundIn(data)
        var input = context.channel.allocator.buffer(capacity: read.readableBytes)
        input.writeImmutableBuffer(read)
        var scanner = self.scanner
        input.withUnsafeMutableReadableBytes { scanner.scan(unmaskingIn: $0) }
        self.scanner = scanner
        let arrived = scanner.arrived
        if arrived > charged {
            guard account.charge(arrived - charged) else {
                refused = true
                account.release(charged)
                charged = 0
                context.fireUserInboundEventTriggered(WebSocketInputRefused())
                return
            }
        } else {
            account.release(charged - arrived)
        }
        charged = arrived
        context.fireChannelRead(wrapInboundOut(input))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        account.release(charged)
        charged = 0
    }
}

/// `WebSocketInputCharge` could not charge the frame arriving: the peer's share is spent.
struct WebSocketInputRefused: Sendable {}
