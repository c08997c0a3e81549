import NIOCore
import NIOTLS

/// Sits behind the TLS handler of a client connection until the handshake is over, so that `connect` can
/// report a server certificate it does not trust as a connection failure, with the reason, rather than as
/// an unexplained close at the first call. Removes itself once the handshake completes. Event-loop confined.
final class TLSHandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let timeout: TimeAmount
    /// Succeeds when the handshake completes; fails with the TLS error, a timeout, or a close.
    private var promise: EventLoopPromise<Void>?
    private var deadline: Scheduled<Void>?

    init(completing promise: EventLoopPromise<Void>, timeout: TimeAmount) {
        self.promise = promise
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.finish(.failure(ChannelError.connectTimeout(self.timeout)))
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            finish(.success(()))
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(TLSClosedDuringHandshake()))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(TLSClosedDuringHandshake()))
    }

    private func finish(_ result: Result<Void, any Error>) {
        deadline?.cancel()
        deadline = nil
        guard let promise else { return }
        self.promise = nil
        promise.completeWith(result)
    }
}

/// The server closed the connection before the TLS handshake completed.
struct TLSClosedDuringHandshake: Error, CustomStringConvertible {
    var description: String { "the server closed the connection during the TLS handshake (is it a TLS listener?)" }
}
