import NIOCore
import NIOSSL
import NIOTLS
import RPCCore
import RPCMetrics
import RPCTLS

/// Holds a connection of a TLS listener until its handshake is done, then hands it on with the identities
/// of the client's verified certificate (`completed` installs the RPC pipeline behind this handler) and removes
/// itself. A client that does not finish its handshake within `timeout` (`FrameTimeout=`, the deadline a frame
/// gets too) is closed. A failed handshake (no certificate where one is required, one the CA did not sign,
/// not TLS at all) is NIOSSL's error: `failed` hears it, and the connection ends. A completed handshake is
/// counted in the listener's series (`rpcd_tls_handshakes_total`), and as resumed
/// (`rpcd_tls_resumed_handshakes_total`) when `TLSResumptionObserver` said so (`sessionResumed`) before it
/// completed; a failed one is counted by `failed`. Event-loop confined.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let timeout: TimeAmount
    private let completed: (_ channel: any Channel, _ identities: [String]) throws -> Void
    private let failed: (any Error) -> Void
    private let listener: RPCListenerMetrics
    private var deadline: Scheduled<Void>?
    private var hasFailed = false
    private var resumed = false

    init(
        timeout: Duration, listener: RPCListenerMetrics,
        completed: @escaping (_ channel: any Channel, _ identities: [String]) throws -> Void,
        failed: @escaping (any Error) -> Void
    ) {
        self.timeout = TimeAmount(timeout)
        self.listener = listener
        self.completed = completed
        self.failed = failed
    }

    /// The server's first flight resumed the client's session (`TLSResumptionObserver`).
    func sessionResumed() {
        resumed = true
    }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.fail(TLSHandshakeTimeout(timeout: self.timeout), context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case TLSUserEvent.handshakeCompleted = event else {
            return context.fireUserInboundEventTriggered(event)
        }
        deadline?.cancel()
        deadline = nil
        listener.tlsSucceeded?.increment()
        if resumed { listener.tlsResumed?.increment() }
        let certificate = (try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self))?.peerCertificate
        do {
            try completed(context.channel, certificate.map(TLSPeerIdentity.identities) ?? [])
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
        } catch {
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Before the handshake is done there is no RPC pipeline to answer: a TLS error ends the connection.
        fail(error, context: context)
    }

    /// Reports the first failure only: closing after a failed handshake may raise more errors.
    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        if !hasFailed {
            hasFailed = true
            failed(error)
        }
        context.close(promise: nil)
    }
}

/// A client that did not complete its TLS handshake in time.
struct TLSHandshakeTimeout: Error, CustomStringConvertible {
    var timeout: TimeAmount
    var description: String { "no TLS handshake within \(timeout.nanoseconds / 1_000_000_000) s" }
}
