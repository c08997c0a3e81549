import NIOCore
import RPCCore

/// Hands a connection's input to the parsers behind it a turn at a time (`RPCLoopTurns`): at most `slice` bytes
/// at once, and once what it handed on in this read has kept the loop for a turn, the rest waits for the loop's
/// next round and nothing more is read meanwhile.
///
/// Why: a parser that is not rpcd's own decodes everything a read hands it before it returns. NIO's HTTP decoder
/// makes a part of each pipelined request head and of each chunk of a chunked body, about a microsecond each, so
/// one read of 64 KiB of one-byte chunks or of `GET`s kept the loop for tens of milliseconds, and 200 such
/// connections kept root's `rpcd.ping` waiting for seconds — before any of rpcd's own turns could apply. Cut
/// here, a read costs the loop at most a turn before the others' input is served. Framed connections need no
/// such handler: `FrameReceiver` only cuts, and the calls it hands on take turns.
///
/// Sits in front of the HTTP decoder (after TLS), and stays when the connection becomes a WebSocket.
final class InputTurnHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    /// The most handed on at once: what the parser behind decodes before the turn is looked at again.
    static let slice = 4096

    private let now: () -> NIODeadline
    /// When the loop started on this connection's input; nil between reads.
    private var turnStarted: NIODeadline?
    /// Input read but not handed on yet: it waits for the next round.
    private var waiting: ByteBuffer?
    /// A `read` arrived while input was waiting: passed on once it is handed on.
    private var readHeld = false

    /// `now` is the clock turns are measured by (a test's own).
    init(now: @escaping () -> NIODeadline = NIODeadline.now) {
        self.now = now
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        if var waiting {
            // More than was asked for (a TLS record's rest): it queues behind what waits.
            self.waiting = nil
            waiting.writeBuffer(&input)
            self.waiting = waiting
            return
        }
        let started = turnStarted ?? now()
        turnStarted = started
        handOn(&input, turnStarted: started, context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if waiting == nil { turnStarted = nil }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if waiting == nil {
            context.read()
        } else {
            readHeld = true
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // What was read before the peer closed is still the peer's input: handed on, then the end.
        if var rest = waiting {
            waiting = nil
            while rest.readableBytes > 0 {
                context.fireChannelRead(wrapInboundOut(rest.readSlice(length: min(Self.slice, rest.readableBytes))!))
            }
            context.fireChannelReadComplete()
        }
        context.fireChannelInactive()
    }

    /// Hands `input` on in slices until the turn that began at `turnStarted` is over; the rest waits.
    private func handOn(_ input: inout ByteBuffer, turnStarted: NIODeadline, context: ChannelHandlerContext) {
        while input.readableBytes > 0 {
            guard now() - turnStarted < RPCLoopTurns.turn else {
                waiting = input
                return yield(context: context)
            }
            context.fireChannelRead(wrapInboundOut(input.readSlice(length: min(Self.slice, input.readableBytes))!))
        }
    }

    private func yield(context: ChannelHandlerContext) {
        RPCLoopTurns.of(context.eventLoop).yield { [self] in
            guard context.channel.isActive, var input = waiting else { return }
            waiting = nil
            let started = now()
            turnStarted = started
            handOn(&input, turnStarted: started, context: context)
            context.fireChannelReadComplete()
            guard waiting == nil else { return }
            turnStarted = nil
            if readHeld {
                readHeld = false
                context.read()
            }
        }
    }
}
