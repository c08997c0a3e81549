import NIOCore
import RPCJSON
import RPCProtocol
import RPCWire

/// What `RPCClient` asks its channel handler to do; written to the channel with `writeAndFlush`.
enum RPCClientCommand: Sendable {
    /// Send `payload` (a request with integer id `id`) and complete `promise` with its reply.
    case call(id: Int, payload: ByteBuffer, promise: EventLoopPromise<JSONValue>, timeout: TimeAmount?)
    /// Send `payload` (a batch of requests with `ids`) and complete `promise` with one outcome per id.
    case batch(ids: [Int], payload: ByteBuffer, promise: EventLoopPromise<[Result<JSONValue, RPCClientError>]>, timeout: TimeAmount?)
    /// Send `payload` and expect nothing back.
    case notify(payload: ByteBuffer)
    /// The caller of the call or batch filed under `key` gave up: fail it with `reason` and tell the server to
    /// cancel it (`rpc.cancel` for each of its ids). Nothing happens when it was answered already.
    case cancel(key: Int, reason: RPCClientError)
    /// Send `payload` as one frame (or, unless `framed`, as bytes without a length prefix); with `expectReply`,
    /// complete `promise` with the next frame that answers no pending call (nil if the connection closes first),
    /// else with nil once written.
    case raw(
        payload: ByteBuffer, framed: Bool, expectReply: Bool, promise: EventLoopPromise<JSONValue?>, timeout: TimeAmount?)
}

/// The client end of a connection: sends requests and matches reply frames to them by id.
///
/// Sits after the frame decoder and the length prepender, so it reads and writes frame payloads. All state
/// lives on the channel's event loop. Replies may come in any order; a reply whose id is unknown (its call
/// timed out) is dropped. A frame that is not JSON, or not a reply, cannot be matched to a call, so every
/// pending call fails with `.protocolViolation`. An error reply with id `null` (a parse-level error such as
/// *Batch too large*) is given to the only pending call, or to the only pending batch if it is a batch-level
/// error; with several candidates it is dropped, and their own timeouts or the connection's end finish them.
/// A call given up on (its timeout passed, or its task was cancelled) is failed at once, and the server is
/// sent `rpc.cancel` for it.
/// A notification from the server (an object with a `method` and no `id`, such as an event) goes to
/// `notifications` when a handler is registered for its method and is dropped otherwise: it answers no call, so
/// it must not fail pending ones (an event already on its way when the client unsubscribed is one such frame).
///
/// A stopping server's `rpc.goingAway` {"accepted": N} (docs/PROTOCOL.md §4 "Shutdown") says that the first N
/// frames written here were accepted and every later one did not run: the handler numbers the frames it
/// writes (`RPCFrameLedger`), fails the calls after the cut with -32006 (`notRun`: the client sends them again
/// elsewhere), hands the notifications after it to `notifications.goneAway`, and refuses new calls the same
/// way; the accepted calls' replies still come, until the server closes.
final class RPCClientHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = RPCClientCommand
    typealias OutboundOut = ByteBuffer

    /// A call or batch waiting for its reply, and the number of the frame it went out in.
    private enum Pending {
        case call(EventLoopPromise<JSONValue>, Scheduled<Void>?, frame: Int)
        case batch(ids: [Int], EventLoopPromise<[Result<JSONValue, RPCClientError>]>, Scheduled<Void>?, frame: Int)

        var frame: Int {
            switch self {
            case .call(_, _, let frame), .batch(_, _, _, let frame): frame
            }
        }

        func fail(_ error: RPCClientError) {
            switch self {
            case .call(let promise, let timer, _):
                timer?.cancel()
                promise.fail(error)
            case .batch(_, let promise, let timer, _):
                timer?.cancel()
                promise.fail(error)
            }
        }
    }

    /// What a call the server did not run fails with: the server's own word for it, -32006 (send it again).
    static let notRun = RPCClientError.remote(.shuttingDown)

    /// Pending calls by id; a batch is filed under its first id.
    private var pending: [Int: Pending] = [:]
    /// Every id of a pending batch → the batch's key in `pending`.
    private var batchKeys: [Int: Int] = [:]
    private var rawWaiter: (promise: EventLoopPromise<JSONValue?>, timer: Scheduled<Void>?)?
    private var isClosed = false
    private var ledger = RPCFrameLedger()
    /// What calls made after the connection ended are told: a TLS refusal, when that is how it ended.
    private var endedBecause = RPCClientError.connectionClosed
    private let maxNestingDepth: Int
    private let notifications: RPCServerNotifications
    private var context: ChannelHandlerContext?

    /// Number of calls and batches waiting for a reply (for tests).
    var pendingCount: Int { pending.count }

    init(maxNestingDepth: Int = RPCLimits.clientMaxNestingDepth, notifications: RPCServerNotifications = RPCServerNotifications()) {
        self.maxNestingDepth = maxNestingDepth
        self.notifications = notifications
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    // MARK: Outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let command = unwrapOutboundIn(data)
        if case .cancel = command, !isClosed {
            // Goes out even after rpc.goingAway: the server still runs it, for the calls it accepted.
        } else if isClosed || ledger.accepted != nil {
            let failure = ledger.accepted == nil ? endedBecause : Self.notRun
            switch command {
            case .call(_, _, let callPromise, _): callPromise.fail(failure)
            case .batch(_, _, let batchPromise, _): batchPromise.fail(failure)
            case .raw(_, _, _, let rawPromise, _): rawPromise.fail(failure)
            case .notify, .cancel: break
            }
            promise?.fail(ledger.accepted == nil ? ChannelError.ioOnClosedChannel : Self.notRun)
            return
        }
        switch command {
        case .call(let id, let payload, let callPromise, let timeout):
            pending[id] = .call(callPromise, schedule(timeout, context: context) { $0.expire(key: id) }, frame: ledger.wrote())
            context.write(wrapOutboundOut(payload), promise: promise)

        case .batch(let ids, let payload, let batchPromise, let timeout):
            guard let key = ids.first else {
                batchPromise.succeed([])
                promise?.succeed()
                return
            }
            pending[key] = .batch(
                ids: ids, batchPromise, schedule(timeout, context: context) { $0.expire(key: key) }, frame: ledger.wrote())
            for id in ids { batchKeys[id] = key }
            context.write(wrapOutboundOut(payload), promise: promise)

        case .notify(let payload):
            ledger.wroteNotification(payload)
            context.write(wrapOutboundOut(payload), promise: promise)

        case .cancel(let key, let reason):
            giveUp(key: key, reason: reason)
            promise?.succeed()

        case .raw(let payload, let framed, let expectReply, let rawPromise, let timeout):
            _ = ledger.wrote()
            if expectReply {
                guard rawWaiter == nil else {
                    rawPromise.fail(RPCClientError.protocolViolation("another sendRaw is already waiting for a reply"))
                    promise?.succeed()
                    return
                }
                rawWaiter = (rawPromise, schedule(timeout, context: context) { $0.expireRawWaiter() })
                writeRaw(payload, framed: framed, context: context, promise: promise)
            } else {
                let written = context.eventLoop.makePromise(of: Void.self)
                written.futureResult.whenComplete { result in
                    switch result {
                    case .success: rawPromise.succeed(nil)
                    case .failure: rawPromise.fail(RPCClientError.connectionClosed)
                    }
                }
                if let promise { written.futureResult.cascade(to: promise) }
                writeRaw(payload, framed: framed, context: context, promise: written)
            }
        }
    }

    /// Writes through the length prepender, or (unframed) from the frame decoder's position in the pipeline,
    /// which is below the prepender, so the bytes go out exactly as given.
    private func writeRaw(
        _ payload: ByteBuffer, framed: Bool, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?
    ) {
        if !framed,
            let below = try? context.pipeline.syncOperations.context(
                handlerType: ByteToMessageHandler<LengthPrefixedFrameDecoder>.self)
        {
            below.write(NIOAny(payload), promise: promise)
        } else {
            context.write(wrapOutboundOut(payload), promise: promise)
        }
    }

    private func schedule(
        _ timeout: TimeAmount?, context: ChannelHandlerContext, _ body: @escaping (RPCClientHandler) -> Void
    ) -> Scheduled<Void>? {
        guard let timeout else { return nil }
        return context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { body(self) }
    }

    private func expire(key: Int) {
        giveUp(key: key, reason: .timedOut)
    }

    /// Fails the call or batch filed under `key` with `reason`, and asks the server to cancel its calls.
    private func giveUp(key: Int, reason: RPCClientError) {
        guard let entry = remove(key: key) else { return }
        entry.fail(reason)
        guard let context else { return }
        let ids: [Int] = if case .batch(let ids, _, _, _) = entry { ids } else { [key] }
        for id in ids {
            _ = ledger.wrote()
            context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: RPCRequestEncoding.cancellation(of: id))), promise: nil)
        }
        context.flush()
    }

    private func expireRawWaiter() {
        guard let waiter = rawWaiter else { return }
        rawWaiter = nil
        waiter.promise.fail(RPCClientError.timedOut)
    }

    private func remove(key: Int) -> Pending? {
        guard let entry = pending.removeValue(forKey: key) else { return nil }
        if case .batch(let ids, _, _, _) = entry {
            for id in ids { batchKeys[id] = nil }
        }
        return entry
    }

    /// `rpc.goingAway`: the server accepted the first `count` frames; the rest did not run.
    private func goingAway(accepted count: Int) {
        guard let unsent = ledger.cut(accepted: count) else { return }
        for key in pending.filter({ ledger.isAfterTheCut($0.value.frame) }).keys {
            remove(key: key)?.fail(Self.notRun)
        }
        notifications.goneAway(unsent: unsent)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let reply: JSONValue
        do {
            let depth = maxNestingDepth
            reply = try frame.withUnsafeReadableBytes { bytes in try JSONValue(parsing: bytes, maxDepth: depth) }
        } catch {
            let text = RPCReply.abbreviated(bytes: Array(frame.readableBytesView))
            unmatched(.failure(.protocolViolation("reply is not valid JSON (\(error)): \(text)")))
            return
        }

        switch reply {
        case .object(let members):
            if members["id"] == nil, case .string(let method)? = members["method"] {
                if method == RPCGoingAway.method, let count = RPCGoingAway.accepted(in: members["params"]) {
                    goingAway(accepted: count)
                } else {
                    _ = notifications.deliver(method: method, params: members["params"])
                }
                return
            }
            if let id = RPCReply.clientID(of: reply), case .call(let promise, let timer, let frame)? = pending[id] {
                pending[id] = nil
                timer?.cancel()
                ledger.answered(frame: frame)
                switch RPCReply.outcome(of: reply) {
                case .success(let result): promise.succeed(result)
                case .failure(let error): promise.fail(error)
                }
                return
            }
        case .array(let replies):
            if let key = replies.lazy.compactMap({ RPCReply.clientID(of: $0) }).compactMap({ self.batchKeys[$0] }).first,
                case .batch(let ids, let promise, let timer, let frame)? = remove(key: key)
            {
                timer?.cancel()
                ledger.answered(frame: frame)
                promise.succeed(Self.outcomes(ids: ids, replies: replies))
                return
            }
        default:
            break
        }
        unmatched(.success(reply))
    }

    /// One outcome per id, in the order of `ids`, from a batch reply array in any order.
    static func outcomes(ids: [Int], replies: [JSONValue]) -> [Result<JSONValue, RPCClientError>] {
        var byID: [Int: Result<JSONValue, RPCClientError>] = [:]
        for reply in replies {
            guard let id = RPCReply.clientID(of: reply) else { continue }
            byID[id] = RPCReply.outcome(of: reply)
        }
        return ids.map { id in
            byID[id] ?? .failure(.protocolViolation("the batch reply has no entry for id \(id)"))
        }
    }

    /// A frame that answers no pending call: the raw waiter's reply, a late reply, an orphan error, or garbage.
    private func unmatched(_ frame: Result<JSONValue, RPCClientError>) {
        if let waiter = rawWaiter {
            rawWaiter = nil
            waiter.timer?.cancel()
            switch frame {
            case .success(let value): waiter.promise.succeed(value)
            case .failure(let error): waiter.promise.fail(error)
            }
            return
        }
        let reply: JSONValue
        switch frame {
        case .failure(let error):
            failAll(error)
            return
        case .success(let value):
            reply = value
        }
        switch reply {
        case .object:
            if RPCReply.clientID(of: reply) != nil { return }  // a late reply: its call timed out
            if RPCReply.hasNullID(reply), case .failure(let error) = RPCReply.outcome(of: reply),
                case .remote(let remote) = error
            {
                routeOrphan(error, code: remote.code)
                return
            }
        case .array(let replies) where replies.contains(where: { RPCReply.clientID(of: $0) != nil }):
            return  // a late batch reply
        default:
            break
        }
        failAll(.protocolViolation("unexpected frame from the server: \(RPCReply.abbreviated(reply))"))
    }

    /// An error reply with id `null`: give it to the call it must belong to, if that is clear.
    private func routeOrphan(_ error: RPCClientError, code: Int) {
        if pending.count == 1, let key = pending.keys.first {
            remove(key: key)?.fail(error)
            return
        }
        // Batch-level errors (batch too large, empty batch) can only answer a batch.
        guard code == -32001 || code == -32600 else { return }
        let batches = pending.filter { if case .batch = $0.value { return true } else { return false } }
        if batches.count == 1, let key = batches.keys.first {
            remove(key: key)?.fail(error)
        }
    }

    private func failAll(_ error: RPCClientError) {
        let entries = pending.values
        pending = [:]
        batchKeys = [:]
        for entry in entries { entry.fail(error) }
        if let waiter = rawWaiter {
            rawWaiter = nil
            waiter.timer?.cancel()
            waiter.promise.fail(error)
        }
    }

    // MARK: Lifecycle

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let tooLarge = error as? FrameTooLargeError {
            if tooLarge.looksLikeTLS {
                failAll(.protocolViolation("the server answered in TLS: connect with a tls:// address or --tls"))
            } else {
                failAll(.protocolViolation("the server sent a \(tooLarge)"))
            }
        } else if let reason = TLSFailure.reason(for: error) {
            endedBecause = .tlsFailed(reason)
            failAll(endedBecause)
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connectionEnded()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        connectionEnded()
    }

    private func connectionEnded() {
        if !isClosed { notifications.connectionEnded() }
        isClosed = true
        if let waiter = rawWaiter {
            rawWaiter = nil
            waiter.timer?.cancel()
            waiter.promise.succeed(nil)
        }
        failAll(.connectionClosed)
    }
}
