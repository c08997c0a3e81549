import NIOCore
import RPCCore

/// Charges the peer's account for the WebSocket frame still arriving, which NIO's `WebSocketFrameDecoder` (the
/// handler after this one) keeps in its buffer until the frame is whole: without it, a peer could make rpcd
/// hold a frame of up to `MaxFrameSize=` on every connection it opens, none of it charged.
///
/// It reads the frame headers as the bytes pass (RFC 6455 §5.2), so it knows which bytes belong to a frame the
/// decoder will hand on in this read and which to the frame still arriving:
///
///     +-+-+-+-+-------+-+-------------+-------------------------------+---------------+----------...
///     |F|R|R|R| opcode|M| payload len |  extended length (0, 2 or 8)  | mask key (0/4) | payload
///     +-+-+-+-+-------+-+-------------+-------------------------------+---------------+----------...
///
/// The frame still arriving is charged what has arrived of it (header and payload), never the length it
/// announces, and given back as soon as it is whole, before the decoder hands it to `WebSocketMessageHandler`,
/// which charges the message from then on. A charge the account refuses stops the input here and tells the
/// message handler (`WebSocketInputRefused`), which closes with 1008 as for a message over the share.
/// Event-loop confined.
final class WebSocketInputCharge: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let account: PeerAccount
    /// The header of the frame arriving, as far as it has arrived (at most 14 bytes).
    private var header: [UInt8] = []
    /// Payload bytes of the frame arriving still to come; nil while its header is incomplete.
    private var payloadLeft: Int?
    /// Bytes of the frame arriving that have arrived.
    private var arrived = 0
    /// What is charged for them now.
    private var charged = 0
    private var refused = false

    init(account: PeerAccount) {
        self.account = account
        header.reserveCapacity(14)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let input = unwrapInboundIn(data)
        input.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count {
                if let left = payloadLeft {
                    let taken = min(left, bytes.count - index)
                    index += taken
                    arrived += taken
                    payloadLeft = left - taken
                } else {
                    header.append(bytes[index])
                    index += 1
                    arrived += 1
                    payloadLeft = Self.payloadLength(header)
                }
                if payloadLeft == 0 {
                    // Whole: the decoder hands it on in this read.
                    header.removeAll(keepingCapacity: true)
                    payloadLeft = nil
                    arrived = 0
                }
            }
        }
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
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        account.release(charged)
        charged = 0
    }

    /// The payload length `header` announces once it is complete; nil while it is not.
    static func payloadLength(_ header: [UInt8]) -> Int? {
        guard header.count >= 2 else { return nil }
        let masked = header[1] & 0x80 != 0
        let short = Int(header[1] & 0x7f)
        let extended = short == 126 ? 2 : short == 127 ? 8 : 0
        guard header.count == 2 + extended + (masked ? 4 : 0) else { return nil }
        guard extended > 0 else { return short }
        var length: UInt64 = 0
        for byte in header[2..<(2 + extended)] { length = length << 8 | UInt64(byte) }
        // Above what an Int holds the decoder refuses the frame anyway; charging stays by bytes arrived.
        return Int(clamping: length)
    }
}

/// `WebSocketInputCharge` could not charge the frame arriving: the peer's share is spent.
struct WebSocketInputRefused: Sendable {}
