import Logging
import NIOCore
import RPCCore
import RPCLogging
import RPCProtocol

/// Gives each HTTP request head `FrameTimeout=` to arrive whole, from the first byte read for it, and charges
/// the bytes of a head still arriving to the peer's account, as `FrameReceiver` does for a frame: NIO's
/// decoder holds them (up to its 80 KiB limit) until the head is whole, and a peer that sends a head a byte at
/// a time resets `IdleTimeout=` with each byte (the slowloris attack) and would hold them, and its connection,
/// for ever.
///
/// It sits before NIO's HTTP decoder, where bytes arrive, and `HTTPRequestHandler`, which sees the heads the
/// decoder makes, tells it when one has arrived (`headArrived`, which gives back the charge and stops the
/// clock) and when its request has ended (`requestEnded`: the next bytes begin the next head). A read that
/// makes a whole head as it passes is never charged and never starts the clock, so a client that sends each
/// request in one write costs a flag. A head past its time, or past what the peer's share can hold, closes
/// the connection: there is no request to answer yet. Event-loop confined.
final class HTTPHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum State {
        /// Waiting for a head: `held` bytes read since the last request ended have made none yet, charged;
        /// `since`: when the first of them was read.
        case awaitingHead(held: Int, since: NIODeadline?)
        /// A head has arrived; its request has not ended.
        case inRequest
        /// Refused, or removed: nothing more is watched.
        case stopped
    }

    private let account: PeerAccount
    private let timeout: TimeAmount
    private let connection: RPCConnectionInfo
    private let statistics: RPCStatistics
    private let refusalLog: LogRateLimiter
    private var state = State.awaitingHead(held: 0, since: nil)
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// Heads that have arrived, counted so that a read can tell whether it made one as it passed.
    private var heads = 0

    init(connection: RPCConnectionInfo, timeout: Duration, statistics: RPCStatistics, refusalLog: LogRateLimiter) {
        self.connection = connection
        self.account = connection.account
        self.timeout = TimeAmount(timeout)
        self.statistics = statistics
        self.refusalLog = refusalLog
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .awaitingHead = state else { return context.fireChannelRead(data) }
        let bytes = unwrapInboundIn(data).readableBytes
        let headsBefore = heads
        context.fireChannelRead(data)
        // No head came of it: the decoder holds what was read, part of a head. (A read that made a head may
        // hold the start of the next one too; the decoder keeps that only until the peer's next read, which
        // is charged and timed if it does not complete it.)
        guard heads == headsBefore, case .awaitingHead(let held, let since) = state else { return }
        guard account.charge(bytes) else {
            return refuse(
                BufferBudgetExceeded(account: account),
                "Refused HTTP request head: the peer's share of MaxBufferedBytesPerPeer= or MaxBufferedBytes= is spent; closing connection",
                refusal: .overBudget, context: context)
        }
        let now = since ?? context.eventLoop.now
        state = .awaitingHead(held: held + bytes, since: now)
        if timer == nil { schedule(context: context, at: now + timeout) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    /// `HTTPRequestHandler` has a head: what was held for it is the decoder's no more.
    func headArrived() {
        heads &+= 1
        guard case .awaitingHead(let held, _) = state else { return }
        account.release(held)
        state = .inRequest
    }

    /// `HTTPRequestHandler` has the end of the request: the bytes read from now on begin the next head.
    func requestEnded() {
        guard case .inRequest = state else { return }
        state = .awaitingHead(held: 0, since: nil)
    }

    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard case .awaitingHead(_, let since?) = state else { return }
            if context.eventLoop.now - since >= timeout {
                refuse(
                    FrameTimedOut(timeout: .nanoseconds(timeout.nanoseconds)),
                    "HTTP request head not complete within FrameTimeout=; closing connection", refusal: .timedOut,
                    context: context)
            } else {
                schedule(context: context, at: since + timeout)  // a later head, still within its time
            }
        }
    }

    private func refuse(
        _ error: any Error, _ log: Logger.Message, refusal: RPCStatistics.FrameRefusal, context: ChannelHandlerContext
    ) {
        stop()
        let code = error is FrameTimedOut ? RPCError.Code.frameTimeout : RPCError.Code.serverBusy
        ProtocolErrorHandler.record(
            log, code: code, error: error, refusal: refusal, connection: connection, statistics: statistics,
            refusalLog: refusalLog)
        context.close(promise: nil)
    }

    private func stop() {
        if case .awaitingHead(let held, _) = state { account.release(held) }
        state = .stopped
        timer?.cancel()
        timer = nil
    }
}
