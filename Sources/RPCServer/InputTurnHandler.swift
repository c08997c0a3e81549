import NIOCore
import RPCCore

/// Hands a connection's input to the parsers behind it a slice at a time, as they ask for it, and a turn of the
/// loop at a time (`RPCLoopTurns`).
///
/// Why: a parser that is not rpcd's own decodes everything a read hands it before it returns, whether or not
/// anyone behind it is ready for what it makes. NIO's HTTP decoder makes a part of each pipelined request head
/// and of each chunk of a chunked body, about a microsecond each; its pipelining handler queues the requests
/// behind the one being answered, uncharged. So one read of 64 KiB of `GET`s or one-byte chunks kept the loop
/// for tens of milliseconds, and 200 connections pipelining `GET`s held 250 MiB of queued requests. Here at
/// most `slice` bytes are handed on at once, the next only when the handlers behind ask for more (a `read`
/// that reaches this handler: NIO's pipelining handler holds it while a response is pending), and once this
/// connection's input has kept the loop for a turn the rest waits for the loop's next round. What waits here
/// is one read's worth, which stops the connection's reading until it is handed on. The turn of input read
/// among the loop's other sockets is shared with theirs (`RPCLoopTurns.inputStarted`): 200 connections whose
/// first request is a `/metrics` each would otherwise keep the loop 200 small turns at once. Framed connections need
/// no such handler: `FrameReceiver` only cuts, and the calls it hands on take turns.
///
/// Sits in front of the HTTP decoder (after TLS), and stays when the connection becomes a WebSocket.
final class InputTurnHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    /// The most handed on at once: what the parser behind decodes before it is asked again.
    static let slice = 4096

    /// Its loop's, from `handlerAdded`: their clock is the one turns are measured by.
    private var turns: RPCLoopTurns?
    /// When the loop started on this connection's input; nil when nothing waits.
    private var turnStarted: NIODeadline?
    /// Input read but not handed on yet.
    private var waiting: ByteBuffer?
    /// The handlers behind asked for more (a `read` reached this handler) since the last slice.
    private var wanted = false
    /// Handing on, now: a `read` from behind only says it wants more.
    private var pumping = false
    /// A round of the loop's turns is to hand on the rest.
    private var yielded = false

    private func now() -> NIODeadline {
        turns?.now() ?? .now()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        turns = RPCLoopTurns.of(context.eventLoop)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        if var waiting {
            self.waiting = nil  // the buffer is ours alone while it grows
            waiting.writeBuffer(&input)
            self.waiting = waiting
        } else {
            waiting = input
        }
        wanted = true  // a read brought it: the handlers behind asked for it
        // Read by the loop among its other sockets' input: the turn is shared with theirs (`inputStarted`).
        if turnStarted == nil { turnStarted = turns?.inputStarted() }
        pump(context: context)
    }

    /// Each slice handed on ends with a read-complete of its own (`pump`); the socket's says nothing more.
    func channelReadComplete(context: ChannelHandlerContext) {}

    func read(context: ChannelHandlerContext) {
        guard waiting != nil else { return context.read() }
        wanted = true
        if !pumping, !yielded { pump(context: context) }
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

    /// Hands on slices while the handlers behind want them and the turn lasts; past the turn, the rest waits
    /// for the next round. Once nothing waits, the socket is read again.
    private func pump(context: ChannelHandlerContext) {
        pumping = true
        defer { pumping = false }
        let started = turnStarted ?? now()
        turnStarted = started
        while wanted, var input = waiting {
            guard now() - started < RPCLoopTurns.turn else { return yield(context: context) }
            wanted = false
            waiting = nil
            let slice = input.readSlice(length: min(Self.slice, input.readableBytes))!
            if input.readableBytes > 0 { waiting = input }
            context.fireChannelRead(wrapInboundOut(slice))
            context.fireChannelReadComplete()
            // Whether the handlers behind want more: a read from the tail reaches this handler unless one holds it.
            if waiting != nil { context.pipeline.read() }
        }
        guard waiting == nil else { return }  // held: a read from behind resumes it
        turnStarted = nil
        wanted = false
        // All handed on: the socket is read again when the handlers behind want more (a read reaching this
        // handler with nothing waiting goes to the socket).
        context.pipeline.read()
    }

    private func yield(context: ChannelHandlerContext) {
        yielded = true
        turns?.yield { [self] in
            yielded = false
            guard context.channel.isActive else { return }
            turnStarted = nil
            pump(context: context)
        }
    }
}
