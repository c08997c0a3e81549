import NIOCore

/// Tells the connection handler (`ConnectionIdleEvent`) when a connection has had no traffic, in or out, for
/// `IdleTimeout=`; again every `timeout` while it stays so (the connection handler closes it only once no
/// call is in flight).
///
/// NIO's `IdleStateHandler` learns about writes by attaching a promise to every one; on a connection that
/// pipelines small calls that promise is a visible share of each call. Here activity is noted once per read
/// burst and once per flush — one clock read, no allocation — and the timer looks at the time of the last
/// activity when it fires. Event-loop confined.
final class IdleTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var lastActivity = NIODeadline.uptimeNanoseconds(0)
    private var timer: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = TimeAmount(timeout)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        lastActivity = context.eventLoop.now
        context.fireChannelReadComplete()
    }

    func flush(context: ChannelHandlerContext) {
        lastActivity = context.eventLoop.now
        context.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    private func start(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        lastActivity = context.eventLoop.now
        schedule(context: context, at: lastActivity + timeout)
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            let idleSince = lastActivity
            if context.eventLoop.now - idleSince >= timeout {
                schedule(context: context, at: context.eventLoop.now + timeout)
                context.fireUserInboundEventTriggered(ConnectionIdleEvent())
            } else {
                schedule(context: context, at: idleSince + timeout)
            }
        }
    }

    private func stop() {
        timer?.cancel()
        timer = nil
    }
}

/// The connection has had no traffic for `IdleTimeout=`.
struct ConnectionIdleEvent: Hashable, Sendable {}
