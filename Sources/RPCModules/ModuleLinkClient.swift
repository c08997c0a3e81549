import NIOCore
import RPCModuleLink

/// rpcd's end of a link, on the link's channel: hands every message to the supervisor, the answers of one read
/// burst to their callers together (`ModuleLinkAnswers`), and tells the supervisor when the link closes. A link
/// that carries something that is no message is closed (the host is broken).
final class ModuleLinkClient: ChannelInboundHandler {
    typealias InboundIn = ModuleLinkMessage

    private let supervisor: ModuleHostSupervisor
    private let attempt: UInt64
    private let answers = ModuleLinkAnswers()

    init(supervisor: ModuleHostSupervisor, attempt: UInt64) {
        self.supervisor = supervisor
        self.attempt = attempt
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        supervisor.received(unwrapInboundIn(data), attempt: attempt, answers: answers)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        answers.finish()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        answers.finish()
        supervisor.linkClosed(attempt: attempt)
        context.fireChannelInactive()
    }
}
