import JSONRPC
import Logging
import NIOCore
import NIOHTTP1
import NIOWebSocket
import RPCCore
import RPCLogging
import RPCProtocol

/// Turns the requests of an HTTP connection into JSON-RPC messages for `RPCConnectionHandler`, and its replies
/// into responses (docs/PROTOCOL.md §9):
///
///     POST /rpc (or /)   Content-Type: application/json   one message or batch  -> 200 application/json, its reply
///                                                                               -> 204, nothing to answer
///     GET  /metrics ...  an `HTTPResource`                                       -> 200 its body, 403, 404
///     OPTIONS /rpc       CORS preflight of an origin in AllowOrigins=            -> 204, 403
///     anything refused   405, 413, 415, 403, 421, 400, 408, 503                  -> a JSON-RPC error object (id null)
///
/// Every request passes `HTTPRequestPolicy` (Host, Origin) first. NIO's `HTTPServerPipelineHandler`, before it,
/// hands on one request at a time and holds the next until this one's response has ended, so pipelined
/// requests are answered in order while a batch still runs its calls concurrently.
///
/// A body is charged to the peer's account as it arrives, refused past `MaxFrameSize=` (413) or when the account
/// cannot cover it (503), and must arrive whole within `FrameTimeout=` of the request head (408); the whole
/// message is charged its length when handed on, and
/// `RPCConnectionHandler` gives that back once it is answered, as for a frame. Replies are charged until the
/// socket takes them (`ChargedOutput`). A refusal while the body may still be arriving closes the connection
/// after its answer: what is left of the request cannot be told from the next one without reading it.
///
/// What every request costs is kept small, as on framed connections (bench/README.md): the headers read are
/// found in one pass (`HTTPRequestFields`); a connection's `Host:` is checked once, not on each request; a
/// body that arrives in the same read burst as its head is handed on as a slice of what was read, copied
/// into a buffer of its own (charged its capacity) only when the burst ends with the body incomplete; and the
/// `FrameTimeout=` timer is scheduled only then, so a request read whole costs no timer.
///
/// Event-loop confined.
final class HTTPRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = HTTPServerResponsePart

    /// What the client asked for the response of the current request.
    private struct Exchange {
        var version: HTTPVersion
        var keepAlive: Bool
        /// The cross-origin `Origin` `AllowOrigins=` lets in, named in the CORS headers.
        var allowedOrigin: String?
    }

    private enum State {
        /// Waiting for a request head.
        case idle
        /// A `POST`'s body is arriving.
        case receiving(Arriving)
        /// The message is with `RPCConnectionHandler`; its reply is awaited.
        case answering(Exchange)
        /// Answered (or being answered) otherwise: the rest of the request is read and dropped until its end.
        case skipping
        /// Refused mid-request: nothing more is read; the connection closes once the answer is out.
        case closing
    }

    /// A `POST` whose body is arriving.
    private struct Arriving {
        var exchange: Exchange
        /// What arrived so far: nil before the first part; a slice of what was read until the read burst
        /// ends (`owned` false), then a buffer of its own.
        var body: ByteBuffer?
        var owned = false
        /// `FrameTimeout=` after the head.
        var deadline: NIODeadline
    }

    private let connection: RPCConnectionInfo
    private let limits: ConnectionLimits
    private let policy: HTTPRequestPolicy
    private let resources: [String: HTTPResource]
    private let router: RPCRouter
    private let refusalLog: LogRateLimiter
    /// Told when a head has arrived and when its request has ended (it keeps the time of heads still arriving).
    private let headDeadline: HTTPHeadDeadline
    private var state = State.idle
    /// What the body being received holds of the account.
    private var charged = 0
    private var bodyTimer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// The `Host:` this connection's requests were last accepted with (`HTTPRequestPolicy`).
    private var acceptedHost: String?
    /// When this connection's turn on the loop began, and when it last made a resource's answer: answers made
    /// back to back (pipelined `GET`s) share a turn.
    private var turnStarted: NIODeadline?
    private var lastAnswerMade: NIODeadline?
    /// The parts the current request's body arrived in so far, and their bytes (`BodyParts`).
    private var bodyParts = BodyParts()

    /// What a body's parts may cost. NIO's decoder hands on each chunk of a chunked body as a part of its own,
    /// and each part costs the loop about a microsecond however small: a body of a million one-byte chunks
    /// would keep the loop for a second with no share or timeout reached. So past its first `free` parts a
    /// body's parts must average `minimumAverage` bytes (a slow link cutting a body into 1,448-byte segments
    /// passes; a chunk per byte does not), or it is refused with 400 and the connection closed.
    struct BodyParts {
        static let free = 64
        static let minimumAverage = 256
        private(set) var count = 0
        private(set) var bytes = 0

        /// Counts `size` more bytes in one more part; false when the parts are too small for what they carry.
        mutating func add(_ size: Int) -> Bool {
            count += 1
            bytes += size
            return count <= Self.free || bytes >= count * Self.minimumAverage
        }
    }

    init(
        connection: RPCConnectionInfo, limits: ConnectionLimits, policy: HTTPRequestPolicy, resources: [HTTPResource],
        router: RPCRouter, refusalLog: LogRateLimiter, headDeadline: HTTPHeadDeadline
    ) {
        self.headDeadline = headDeadline
        self.connection = connection
        self.limits = limits
        self.policy = policy
        self.resources = Dictionary(resources.map { ($0.path, $0) }, uniquingKeysWith: { _, last in last })
        self.router = router
        self.refusalLog = refusalLog
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        releaseBody()
        state = .closing
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            headDeadline.headArrived()
            guard case .idle = state else { return }
            bodyParts = BodyParts()
            begin(head, context: context)
        case .body(var part):
            guard bodyParts.add(part.readableBytes) else { return refuseSmallParts(context: context) }
            guard case .receiving(var arriving) = state else { return }
            let size = (arriving.body?.readableBytes ?? 0) + part.readableBytes
            guard size <= limits.maxFrameSize else {
                return refuse(
                    .payloadTooLarge, .frameTooLarge(announced: size, limit: limits.maxFrameSize), arriving.exchange,
                    closing: true, log: "Refused oversize HTTP request body; closing connection", countedAsRefusedFrame: false)
            }
            state = .idle  // the body buffer is ours alone while it grows
            if var body = arriving.body {
                arriving.body = nil
                if !arriving.owned {
                    body = Self.copied(body, room: part.readableBytes, context: context)
                    arriving.owned = true
                }
                body.writeBuffer(&part)
                arriving.body = body
            } else {
                arriving.body = part
            }
            state = .receiving(arriving)
            chargeHeldBody(arriving)
        case .end:
            headDeadline.requestEnded()
            switch state {
            case .receiving(let arriving):
                stopBodyTimer()
                let message = arriving.body ?? context.channel.allocator.buffer(capacity: 0)
                let chargedItsLength = arriving.body != nil && charged == message.readableBytes
                if chargedItsLength {
                    charged = 0  // a slice of the read, charged its length already: the message takes the charge over
                } else {
                    releaseBody()
                }
                guard chargedItsLength || connection.account.charge(message.readableBytes) else {
                    return refuse(
                        .serviceUnavailable, .serverBusy(limit: connection.account.shareLimit), arriving.exchange, closing: true,
                        log: "Refused HTTP request: the peer's share of MaxBufferedBytesPerPeer= or MaxBufferedBytes= is spent; closing connection")
                }
                state = .answering(arriving.exchange)
                context.fireChannelRead(wrapInboundOut(message))
            case .skipping:
                state = .idle
            default:
                break
            }
        }
    }

    /// A body still arriving when the read burst ends waits for the next reads: in a buffer of its own, so
    /// that the storage of the read it came in is not kept, and under its deadline.
    func channelReadComplete(context: ChannelHandlerContext) {
        if case .receiving(var arriving) = state {
            if let body = arriving.body, !arriving.owned {
                state = .idle
                arriving.body = Self.copied(body, room: 0, context: context)
                arriving.owned = true
                state = .receiving(arriving)
                chargeHeldBody(arriving)
            }
            if case .receiving = state, bodyTimer == nil { startBodyTimer(arriving, context: context) }
        }
        context.fireChannelReadComplete()
    }

    /// A reply of `RPCConnectionHandler`: the answer to the current request (empty: nothing to answer, 204).
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .answering(let exchange) = state else {
            promise?.fail(ChannelError.ioOnClosedChannel)  // events have no place in an HTTP exchange
            return
        }
        let reply = unwrapOutboundIn(data)
        state = .idle
        // Not flushed here: `ChargedOutput` flushes once it has handed on every reply of the burst.
        if reply.readableBytes == 0 {
            respond(.noContent, headers: HTTPHeaders(), body: nil, exchange, flush: false, promise: promise)
        } else {
            let headers = HTTPHeaders([("content-type", "application/json"), ("content-length", String(reply.readableBytes))])
            respond(.ok, headers: headers, body: reply, exchange, flush: false, promise: promise, lengthSet: true)
        }
    }

    /// NIO's upgrader reports an upgrade it was told to refuse (wrong path, a refused Origin) as an error, then
    /// hands the request on as a plain `GET`, which is answered here with the reason: not a reason to close.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOWebSocketUpgradeError { return }
        context.fireErrorCaught(error)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // An idle connection waiting for its next request is idle for HTTP too; one mid-request is not.
        if event is ConnectionIdleEvent, case .receiving = state { return }
        context.fireUserInboundEventTriggered(event)
    }

    private func begin(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let fields = HTTPRequestFields(head.headers)
        let (refusal, allowedOrigin) = policy.check(fields, acceptedHost: acceptedHost)
        var exchange = Exchange(version: head.version, keepAlive: head.isKeepAlive, allowedOrigin: allowedOrigin)
        let hasBody = fields.hasBody
        if let refusal {
            exchange.allowedOrigin = nil
            let log: Logger.Message = refusal.status == .badRequest
                ? "Refused malformed HTTP request" : "Refused HTTP request by its Host or Origin (docs/SECURITY.md)"
            return refuse(refusal.status, .invalidRequest(refusal.reason), exchange, closing: hasBody, log: log)
        }
        acceptedHost = fields.host
        let path = Self.path(of: head.uri)
        let isRPCPath = path == HTTPSettings.rpcPath || path == "/"
        switch head.method {
        case .POST where isRPCPath:
            guard HTTPRequestPolicy.isJSON(contentType: fields.contentType) else {
                return refuse(
                    .unsupportedMediaType,
                    .invalidRequest("a JSON-RPC request needs Content-Type: application/json"), exchange, closing: hasBody,
                    log: "Refused HTTP request without Content-Type: application/json (docs/SECURITY.md)")
            }
            if let length = fields.contentLength, length > limits.maxFrameSize {
                return refuse(
                    .payloadTooLarge, .frameTooLarge(announced: length, limit: limits.maxFrameSize), exchange, closing: true,
                    log: "Refused oversize HTTP request body; closing connection", countedAsRefusedFrame: false)
            }
            // The timer waits for the end of the read burst: most bodies have arrived by then.
            state = .receiving(Arriving(exchange: exchange, deadline: context.eventLoop.now + TimeAmount(limits.frameTimeout)))
        case .OPTIONS where isRPCPath:
            guard let origin = allowedOrigin else {
                return refuse(
                    .forbidden, .invalidRequest("cross-origin requests need the origin in [HTTP] AllowOrigins="), exchange,
                    closing: hasBody, log: "Refused CORS preflight of an origin not in AllowOrigins= (docs/SECURITY.md)")
            }
            state = .skipping
            respondSmall(.noContent, headers: HTTPRequestPolicy.preflightHeaders(origin: origin), body: nil, exchange)
        case .GET:
            guard let resource = resources[String(path)] else {
                let error: RPCError = path == HTTPSettings.rpcPath
                    ? .invalidRequest("GET \(path) is for WebSocket (Upgrade: websocket, as the connection's first request); calls are POSTed")
                    : .invalidRequest("nothing is served at \(path)")
                return refuse(
                    path == HTTPSettings.rpcPath ? .methodNotAllowed : .notFound, error, exchange, closing: hasBody, log: nil,
                    headers: path == HTTPSettings.rpcPath ? ["allow": "POST, GET, OPTIONS"] : [:])
            }
            state = .skipping
            serve(resource, head: head, exchange, context: context)
        default:
            let allowed = isRPCPath ? "POST, GET, OPTIONS" : "GET"
            refuse(
                .methodNotAllowed, .invalidRequest("\(head.method) \(path) is not served; \(path) allows \(allowed)"), exchange,
                closing: hasBody, log: nil, headers: ["allow": allowed])
        }
    }

    /// Answers `GET` of a registered resource, if the access rules let the peer call its method.
    private func serve(_ resource: HTTPResource, head: HTTPRequestHead, _ exchange: Exchange, context: ChannelHandlerContext) {
        guard resource.allows(connection.peer, registry: router.registry) else {
            router.registry.route(for: resource.method)?.metrics?.refused()
            return refuse(.forbidden, .accessDenied(resource.method), exchange, closing: false, log: "Resource refused by the access rules")
        }
        let request = HTTPResource.Request(uri: head.uri, peer: connection.peer, eventLoop: context.eventLoop, headers: head.headers)
        // NIO's pipelining handler hands on the next request as soon as an answer is written, so a client that
        // pipelines `GET /metrics` would keep the loop making answers, every other connection of the loop (root's
        // `rpcd.ping`, module hosts' liveness checks) waiting. It has the loop for a turn, as calls do
        // (`RPCLoopTurns`), then waits for the loop's next round.
        let now = context.eventLoop.now
        if let started = turnStarted, let made = lastAnswerMade, now - made < RPCLoopTurns.turn {
            guard now - started < RPCLoopTurns.turn else {
                turnStarted = nil
                router.turns(on: context.eventLoop).yield { [self] in
                    guard let context = self.context else { return }
                    turnStarted = context.eventLoop.now
                    answer(resource, request, exchange, context: context)
                }
                return
            }
        } else {
            turnStarted = now  // the first answer in a while: a turn of its own
        }
        answer(resource, request, exchange, context: context)
    }

    private func answer(
        _ resource: HTTPResource, _ request: HTTPResource.Request, _ exchange: Exchange, context: ChannelHandlerContext
    ) {
        // The answer arrives on this handler's loop (`hop`), so the handler may be used there: `assumeIsolated`
        // says so to the compiler instead of a Sendable closure capturing a handler that is not.
        resource.respond(request).hop(to: context.eventLoop).assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success(let response):
                lastAnswerMade = context.eventLoop.now  // before it is written: the next request follows from inside
                let bytes = Self.headCharge + response.body.readableBytes
                guard let answered = ownAnswer(charging: bytes, force: false) else {
                    return refuse(
                        .serviceUnavailable, .serverBusy(limit: connection.account.shareLimit), exchange, closing: true,
                        log: "Refused HTTP request: the peer's share of MaxBufferedBytesPerPeer= or MaxBufferedBytes= is spent; closing connection")
                }
                respond(response.status, headers: response.headers, body: response.body, exchange, flush: true, promise: answered)
            case .failure(let error):
                connection.logger.warning("HTTP resource failed", metadata: [LogField.error: "\(error)"])
                respondError(.internalServerError, .internalError, exchange, closing: false, headers: [:])
            }
        }
    }

    /// Answers with `status` and `error`'s object, counted and logged (`log`, at notice and rate-limited) as a
    /// refused message; closes the connection after it when `closing`.
    /// A body arriving in parts too small for what they carry (`BodyParts`): answered 400 if it is still to be
    /// answered, and the connection closed either way.
    private func refuseSmallParts(context: ChannelHandlerContext) {
        let detail = "a request body's chunks past its first \(BodyParts.free) must average \(BodyParts.minimumAverage) bytes"
        switch state {
        case .receiving(let arriving):
            refuse(
                .badRequest, .invalidRequest(detail), arriving.exchange, closing: true,
                log: "Refused HTTP request body sent in tiny chunks; closing connection")
        case .skipping:
            connection.logger.debug("HTTP request refused", metadata: [LogField.error: "400 \(detail)"])
            state = .closing
            context.close(promise: nil)
        case .idle, .answering, .closing:
            break
        }
    }

    private func refuse(
        _ status: HTTPResponseStatus, _ error: RPCError, _ exchange: Exchange, closing: Bool, log: Logger.Message?,
        countedAsRefusedFrame: Bool = true, headers: [String: String] = [:]
    ) {
        stopBodyTimer()
        releaseBody()
        if let log {
            ProtocolErrorHandler.record(
                log, code: error.code, error: HTTPRefusal(status: status, error: error),
                refusal: countedAsRefusedFrame ? Self.refusal(status) : nil,
                connection: connection, statistics: router.statistics, refusalLog: refusalLog)
        } else {
            router.statistics.metrics.invalidMessage.failed(code: error.code, after: nil)
            connection.logger.debug("HTTP request refused", metadata: [LogField.error: "\(status.code) \(error.message)"])
        }
        state = closing ? .closing : .skipping
        respondError(status, error, exchange, closing: closing, headers: headers)
    }

    /// The frame refusal an HTTP status stands for, if any.
    private static func refusal(_ status: HTTPResponseStatus) -> RPCStatistics.FrameRefusal? {
        switch status {
        case .payloadTooLarge: .tooLarge
        case .serviceUnavailable: .overBudget
        case .requestTimeout: .timedOut
        default: nil
        }
    }

    private func respondError(
        _ status: HTTPResponseStatus, _ error: RPCError, _ exchange: Exchange, closing: Bool, headers extra: [String: String]
    ) {
        var body = ByteBuffer()
        RPCReplyWriter.writeError(error, id: nil, into: &body)
        var exchange = exchange
        if closing { exchange.keepAlive = false }
        var headers = HTTPHeaders(extra.map { ($0.key, $0.value) })
        headers.add(name: "content-type", value: "application/json")
        respondSmall(status, headers: headers, body: body, exchange)
    }

    /// Writes a small answer of this handler's own (a refusal, a preflight), charged (`ownAnswer`). One the
    /// peer's share cannot cover still goes out, charged anyway, and ends the connection: a peer that pipelines
    /// requests it knows are refused, and reads nothing, is stopped at its share.
    private func respondSmall(_ status: HTTPResponseStatus, headers: HTTPHeaders, body: ByteBuffer?, _ exchange: Exchange) {
        let bytes = Self.headCharge + (body?.readableBytes ?? 0)
        var exchange = exchange
        var answered = ownAnswer(charging: bytes, force: false)
        if answered == nil {
            exchange.keepAlive = false
            state = .closing
            answered = ownAnswer(charging: bytes, force: true)
        }
        respond(status, headers: headers, body: body, exchange, flush: true, promise: answered)
    }

    /// A response head (status line and rpcd's few headers) is charged as this many bytes: its exact size is
    /// known only to NIO's encoder, and a few hundred bytes is what rpcd's heads take.
    private static let headCharge = 256

    /// The promise of an answer of this handler's own (a resource, a refusal, a preflight), whose bytes are
    /// charged to the peer until the socket takes them, as `ChargedOutput` charges replies: NIO's pipelining
    /// handler hands on the next request as soon as an answer is written, so a peer that pipelines
    /// `GET /metrics` and never reads would pile answers up otherwise (100 connections held 99 MB). Nil, and
    /// nothing charged, when the peer's share cannot cover it, unless `force`.
    private func ownAnswer(charging bytes: Int, force: Bool) -> EventLoopPromise<Void>? {
        guard let context else { return nil }
        let account = connection.account
        if force {
            account.forceCharge(bytes)
        } else if !account.charge(bytes) {
            return nil
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { _ in account.release(bytes) }
        return written
    }

    /// Writes one whole response: head, body, end, flushed when `flush` (a reply of `RPCConnectionHandler` is
    /// flushed by it, with the others of its burst). The end's promise is the caller's (`ChargedOutput` gives
    /// the charge back when it completes); a connection that is not kept alive closes once it is written.
    /// `lengthSet`: `headers` has the `Content-Length:` already.
    private func respond(
        _ status: HTTPResponseStatus, headers: HTTPHeaders, body: ByteBuffer?, _ exchange: Exchange, flush: Bool,
        promise: EventLoopPromise<Void>?, lengthSet: Bool = false
    ) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        var headers = headers
        // A 304's length would be that of the representation it stands for (RFC 9110 §8.6): none is sent.
        if !lengthSet && status != .noContent && status != .notModified {
            headers.add(name: "content-length", value: String(body?.readableBytes ?? 0))
        }
        if let origin = exchange.allowedOrigin, !headers.contains(name: "access-control-allow-origin") {
            HTTPRequestPolicy.corsHeaders(origin: origin, into: &headers)
        }
        if !exchange.keepAlive {
            headers.add(name: "connection", value: "close")
        } else if exchange.version.minor == 0 {
            headers.add(name: "connection", value: "keep-alive")
        }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: exchange.version, status: status, headers: headers))), promise: nil)
        if let body, body.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        guard !exchange.keepAlive else {
            context.write(wrapOutboundOut(.end(nil)), promise: promise)
            if flush { context.flush() }
            return
        }
        let ended = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: ended)
        if let promise { ended.futureResult.cascade(to: promise) }
        let channel = context.channel
        ended.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }

    /// The path of a request target, without its query.
    private static func path(of uri: String) -> Substring {
        guard let query = uri.utf8.firstIndex(of: UInt8(ascii: "?")) else { return uri[...] }
        return uri[..<query]
    }

    /// `body` in a buffer of its own, with `room` for more.
    private static func copied(_ body: ByteBuffer, room: Int, context: ChannelHandlerContext) -> ByteBuffer {
        var body = body
        var own = context.channel.allocator.buffer(capacity: body.readableBytes + room)
        own.writeBuffer(&body)
        return own
    }

    /// Charges what `arriving`'s body holds: a buffer of its own its capacity, a slice of a read its length
    /// (the read's storage is the channel's, and given up at the end of the burst). Refuses the request
    /// (503) when the account cannot cover it.
    private func chargeHeldBody(_ arriving: Arriving) {
        guard let body = arriving.body else { return }
        guard chargeBody(holding: arriving.owned ? body.capacity : body.readableBytes) else {
            return refuse(
                .serviceUnavailable, .serverBusy(limit: connection.account.shareLimit), arriving.exchange, closing: true,
                log: "Refused HTTP request: the peer's share of MaxBufferedBytesPerPeer= or MaxBufferedBytes= is spent; closing connection")
        }
    }

    /// Brings the account's charge for the body being received to `holding`; false when it cannot cover it.
    private func chargeBody(holding: Int) -> Bool {
        if holding > charged {
            guard connection.account.charge(holding - charged) else { return false }
        } else if holding < charged {
            connection.account.release(charged - holding)
        }
        charged = holding
        return true
    }

    private func releaseBody() {
        connection.account.release(charged)
        charged = 0
        if case .receiving(var arriving) = state {
            arriving.body = nil
            state = .receiving(arriving)
        }
    }

    private func startBodyTimer(_ arriving: Arriving, context: ChannelHandlerContext) {
        bodyTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: arriving.deadline) { [self] in
            bodyTimer = nil
            guard case .receiving = state else { return }
            refuse(
                .requestTimeout, .frameTimeout(seconds: Int(limits.frameTimeout.components.seconds)), arriving.exchange, closing: true,
                log: "HTTP request body not complete within FrameTimeout=; closing connection")
        }
    }

    private func stopBodyTimer() {
        bodyTimer?.cancel()
        bodyTimer = nil
    }
}

/// A request refused with an HTTP status, for the log.
struct HTTPRefusal: Error, CustomStringConvertible {
    var status: HTTPResponseStatus
    var error: RPCError
    var description: String { "\(status.code) \(status.reasonPhrase): \(error)" }
}
