import NIOCore
import RPCCore
import RPCModuleLink

/// rpcd's end of a link, on the link's channel: hands every message to the supervisor, the answers of one read
/// burst to their callers together (`ModuleLinkAnswers`), and tells the supervisor when the link closes. A link
/// that carries something that is no message is closed (the host is broken).
///
/// What a message costs rpcd is the host's to decide (an event published to thousands of subscribed
/// connections, a burst of answers), so the link takes turns on its loop as a connection's pipeline does: once
/// the messages of one read have kept the loop for `RPCLoopTurns.turn`, the rest wait, nothing more is read from
/// the link, and they run in the next round, after the loop has served its other connections' input. A host
/// that writes faster than rpcd handles its messages finds the link's socket full.
final class ModuleLinkClient: ChannelDuplexHandler {
    /// The messages of one read burst (`ModuleLinkCodec`).
    typealias InboundIn = [ModuleLinkMessage]
    typealias OutboundIn = Never

    /// Hands a message to the supervisor, with the answers of its read burst.
    private let receive: (ModuleLinkMessage, ModuleLinkAnswers) -> Void
    /// Tells the supervisor that the link closed.
    private let closed: () -> Void
    /// The clock turns are measured by; nil: the loop's (`RPCLoopTurns.now`).
    private let clock: (() -> NIODeadline)?
    private let answers = ModuleLinkAnswers()
    /// Its loop's, from `handlerAdded`.
    private var turns: RPCLoopTurns?
    /// When the loop started on the messages it handles now; nil between read bursts.
    private var turnStarted: NIODeadline?
    /// Messages read but not handled yet: they wait for the next turn.
    private var waiting = CircularBuffer<ModuleLinkMessage>()
    /// A `read` arrived while messages were waiting: passed on once they are handled.
    private var readHeld = false

    convenience init(supervisor: ModuleHostSupervisor, attempt: UInt64) {
        self.init(
            receive: { message, answers in supervisor.received(message, attempt: attempt, answers: answers) },
            closed: { supervisor.linkClosed(attempt: attempt) })
    }

    /// `now` is the clock turns are measured by (a test's own); by default the loop's.
    init(
        receive: @escaping (ModuleLinkMessage, ModuleLinkAnswers) -> Void, closed: @escaping () -> Void,
        now: (() -> NIODeadline)? = nil
    ) {
        self.receive = receive
        self.closed = closed
        self.clock = now
    }

    private func now() -> NIODeadline {
        clock?() ?? turns?.now() ?? .now()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        turns = RPCLoopTurns.of(context.eventLoop)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let messages = unwrapInboundIn(data)
        guard waiting.isEmpty else { return waiting.append(contentsOf: messages) }
        for index in messages.indices {
            let time = now()
            let started = turnStarted ?? time
            turnStarted = started
            guard time - started < RPCLoopTurns.turn else {
                waiting.append(contentsOf: messages[index...])
                return yield(context: context)
            }
            receive(messages[index], answers)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if waiting.isEmpty {
            answers.finish()
            turnStarted = nil
        }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if waiting.isEmpty {
            context.read()
        } else {
            readHeld = true
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // What the host sent before it closed the link is handled (its answers reach their callers) at once:
        // there is nothing more to read, and the supervisor fails what is still in flight next.
        while let message = waiting.popFirst() { receive(message, answers) }
        answers.finish()
        closed()
        context.fireChannelInactive()
    }

    /// Hands the waiting messages on in the next round, a turn's worth each round.
    private func yield(context: ChannelHandlerContext) {
        answers.finish()
        turns?.yield { [self] in
            guard context.channel.isActive else { return }
            let started = now()
            while let message = waiting.popFirst() {
                receive(message, answers)
                if !waiting.isEmpty, now() - started >= RPCLoopTurns.turn { return yield(context: context) }
            }
            answers.finish()
            turnStarted = nil
            if readHeld {
                readHeld = false
                context.read()
            }
        }
    }
}
