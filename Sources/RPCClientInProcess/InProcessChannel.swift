import NIOCore
import Synchronization

/// A `Channel` with no socket behind it: what the client's handlers write is handed, one frame at a time, to
/// `deliver`, and `receive` fires frames back into the pipeline. It lives on a real event loop, so timers
/// (call timeouts) and the client's handlers behave exactly as on a socket.
///
/// Event-loop confined, like a socket channel (its state is touched only on `eventLoop`, hence
/// `@unchecked Sendable`); `isActive` is an atomic and may be read anywhere.
final class InProcessChannel: Channel, ChannelCore, @unchecked Sendable {
    let eventLoop: any EventLoop
    let allocator = ByteBufferAllocator()
    private var _pipeline: ChannelPipeline!
    private let closePromise: EventLoopPromise<Void>
    private let active = Atomic<Bool>(false)
    private var pendingWrites: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    /// Takes one frame the client wrote (and the channel to `receive` the answer on); called on `eventLoop`,
    /// never from inside a pipeline operation.
    private let deliver: (ByteBuffer, InProcessChannel) -> Void
    /// Called once, on `eventLoop`, when the channel closes.
    private let onClose: () -> Void

    init(eventLoop: any EventLoop, deliver: @escaping (ByteBuffer, InProcessChannel) -> Void, onClose: @escaping () -> Void) {
        self.eventLoop = eventLoop
        self.closePromise = eventLoop.makePromise()
        self.deliver = deliver
        self.onClose = onClose
        self._pipeline = ChannelPipeline(channel: self)
    }

    /// Hands a frame from the server to the client's handlers. On `eventLoop`.
    func receive(_ frame: ByteBuffer) {
        guard isActive else { return }
        pipeline.fireChannelRead(frame)
        pipeline.fireChannelReadComplete()
    }

    // MARK: Channel

    var pipeline: ChannelPipeline { _pipeline }
    var closeFuture: EventLoopFuture<Void> { closePromise.futureResult }
    var isWritable: Bool { true }
    var isActive: Bool { active.load(ordering: .acquiring) }
    var localAddress: SocketAddress? { nil }
    var remoteAddress: SocketAddress? { nil }
    var parent: (any Channel)? { nil }
    var _channelCore: any ChannelCore { self }

    func setOption<Option: ChannelOption>(_ option: Option, value: Option.Value) -> EventLoopFuture<Void> {
        eventLoop.makeSucceededVoidFuture()  // no socket: no option means anything
    }

    func getOption<Option: ChannelOption>(_ option: Option) -> EventLoopFuture<Option.Value> {
        eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
    }

    // MARK: ChannelCore (on `eventLoop`)

    func localAddress0() throws -> SocketAddress { throw ChannelError.operationUnsupported }
    func remoteAddress0() throws -> SocketAddress { throw ChannelError.operationUnsupported }

    func register0(promise: EventLoopPromise<Void>?) {
        promise?.succeed()
        pipeline.fireChannelRegistered()
    }

    func registerAlreadyConfigured0(promise: EventLoopPromise<Void>?) {
        active.store(true, ordering: .releasing)
        register0(promise: promise)
        pipeline.fireChannelActive()
    }

    func bind0(to address: SocketAddress, promise: EventLoopPromise<Void>?) {
        promise?.fail(ChannelError.operationUnsupported)
    }

    func connect0(to address: SocketAddress, promise: EventLoopPromise<Void>?) {
        promise?.fail(ChannelError.operationUnsupported)
    }

    func write0(_ data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard isActive else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        pendingWrites.append((unwrapData(data, as: ByteBuffer.self), promise))
    }

    func flush0() {
        let writes = pendingWrites
        pendingWrites = []
        for (frame, promise) in writes {
            promise?.succeed()
            // Delivered after the pipeline operation that wrote it has returned, as a socket would.
            eventLoop.execute { [self] in
                if isActive { deliver(frame, self) }
            }
        }
    }

    func read0() {}

    func close0(error: any Error, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard active.exchange(false, ordering: .acquiringAndReleasing) else {
            promise?.fail(ChannelError.alreadyClosed)
            return
        }
        for (_, writePromise) in pendingWrites { writePromise?.fail(ChannelError.ioOnClosedChannel) }
        pendingWrites = []
        onClose()
        promise?.succeed()
        pipeline.fireChannelInactive()
        pipeline.fireChannelUnregistered()
        eventLoop.execute { [self] in
            removeHandlers(pipeline: pipeline)
            closePromise.succeed()
        }
    }

    func triggerUserOutboundEvent0(_ event: Any, promise: EventLoopPromise<Void>?) {
        promise?.fail(ChannelError.operationUnsupported)
    }

    func channelRead0(_ data: NIOAny) {}  // the end of the pipeline: nothing reads past the client's handler
    func errorCaught0(error: any Error) {}
}
