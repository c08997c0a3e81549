import NIOCore
import RPCTLS

/// Watches what a TLS listener's connection writes first — the server's first flight, which `NIOSSLHandler`
/// writes through this handler toward the socket — until `TLSServerFlight` can tell whether the handshake
/// resumed a session, tells `decided`, and removes itself at the next flush: from then on it costs the
/// connection nothing.
///
/// It sits at the head of the pipeline, before `NIOSSLServerHandler`, because only there are the bytes still
/// the plain-text handshake. It copies only when a flight comes in several writes, and gives up (a full
/// handshake, as far as counting goes) past `maximumFlight` bytes. Event-loop confined.
final class TLSResumptionObserver: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var flight: ByteBuffer?
    private var done = false
    private let decided: (_ resumed: Bool) -> Void

    /// More than any first flight with a certificate chain of a few certificates.
    static let maximumFlight = 64 << 10

    init(decided: @escaping (_ resumed: Bool) -> Void) {
        self.decided = decided
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !done else { return context.write(data, promise: promise) }
        var bytes = unwrapOutboundIn(data)
        if flight == nil {
            flight = bytes
        } else {
            flight!.writeBuffer(&bytes)
        }
        let verdict = TLSServerFlight.verdict(flight!)
        context.write(data, promise: promise)
        switch verdict {
        case .needMore where flight!.readableBytes < Self.maximumFlight:
            return
        case .helloRetry:
            flight = nil  // the client tries again; the server's next flight answers
            return
        case .resumed:
            finish(resumed: true, context: context)
        case .full, .unknown, .needMore:
            finish(resumed: false, context: context)
        }
    }

    private func finish(resumed: Bool, context: ChannelHandlerContext) {
        done = true
        flight = nil
        decided(resumed)
    }

    /// Leaves the pipeline once it has decided, after the flush that sends its last flight: removed inside
    /// `write`, the flush that follows it did not reach the socket.
    func flush(context: ChannelHandlerContext) {
        context.flush()
        if done { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }
}
