import CRPCDHostSupport
import Dispatch
import Logging
import NIOCore
import NIOPosix
import RPCBinding
import RPCJSON
import RPCLogging
import RPCModuleLink
import RPCProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A program handler's program, as its module host runs it (docs/HANDLER-PROTOCOL.md): started inside the
/// host's walls (its user, cgroup, Landlock and seccomp, which a child inherits), spoken to in lines of JSON on
/// its standard input and output, its standard error logged with the handler's fields.
///
/// The host stands in the program's place on the link, so everything rpcd does for a module it does for a
/// program unchanged: supervision, params binding, access rules, `rpc.discover`, timeouts, fair shares. What
/// the host adds is the translation: link calls to lines (params by name, ids the link's tokens), lines to
/// link answers and events, and the program's declaration to the descriptor the host reports. A program that
/// ends ends its host the same way (`rpcd_program_exit_as`), so rpcd reports the program's own termination.
/// Confined to the host's event loop (`@unchecked Sendable` only to travel in its futures), but for `stop`, which
/// the host's main thread runs once the loop is done.
final class HandlerProgram: @unchecked Sendable {
    /// The protocol version this side speaks.
    static let protocolVersion = 1
    /// How long a program has to declare itself.
    static let declarationTimeout = TimeAmount.seconds(10)
    /// After its standard input closed, how long a program has to exit before SIGTERM, and again before SIGKILL.
    static let stopGrace: Int32 = 5000

    let pid: pid_t
    private let channel: any Channel
    private let logger: Logger
    private var declaration: HandlerProgramDeclaration?
    private var declared: EventLoopPromise<HandlerProgramDeclaration>?
    private var outbox: ModuleLinkOutbox?
    /// Calls sent and not answered, by token, with whether their method is concurrent.
    private var inFlight: [UInt64: Bool] = [:]
    /// Calls waiting for a non-concurrent call to end, or to be one.
    private var queued = CircularBuffer<(token: UInt64, method: Int, params: ByteBuffer?)>()
    /// rpcd stopped the handler: the program's end is expected.
    private(set) var stopping = false
    /// The handler's `Timeout=`: how long after its `rpc.cancel` an unanswered call makes the program hung.
    private var hangAfter: TimeAmount?
    /// Lines written to the program and not yet flushed: the calls of one read of the link go in one `write`.
    private var unflushed = false
    /// The outbox is held while a read of the program's output is handled: its answers go out in one burst.
    private var outputHeld = false
    private let garbageLog = LogRateLimiter(burst: 10, per: .seconds(1))

    /// The program the host runs, once it has started; its end ends the host.
    nonisolated(unsafe) static var current: HandlerProgram?

    private init(pid: pid_t, channel: any Channel, logger: Logger) {
        self.pid = pid
        self.channel = channel
        self.logger = logger
    }

    /// Starts the program at `path` and sends it `rpcd.start`; succeeds with its declaration.
    static func start(
        path: String, start: ModuleHostStart, stateDirectory: String?, eventLoop: any EventLoop, logger: Logger
    ) -> EventLoopFuture<(HandlerProgram, HandlerProgramDeclaration)> {
        do {
            let (pid, input, output, errors) = try spawn(path: path, handler: start.handler)
            let lines = LineCutter(maxLength: RPCLimits.maxFrameSize.defaultValue)
            return NIOPipeBootstrap(group: eventLoop)
                .takingOwnershipOfDescriptors(input: output, output: input)
                .flatMap { channel in
                    let program = HandlerProgram(pid: pid, channel: channel, logger: logger)
                    program.hangAfter = start.timeoutMilliseconds.map { .milliseconds(Int64($0)) }
                    current = program
                    program.watchExit(on: eventLoop)
                    let promise = eventLoop.makePromise(of: HandlerProgramDeclaration.self)
                    program.declared = promise
                    let timeout = eventLoop.scheduleTask(in: declarationTimeout) {
                        program.refuse("did not declare itself within \(declarationTimeout.nanoseconds / 1_000_000_000) s")
                    }
                    promise.futureResult.whenComplete { _ in timeout.cancel() }
                    do {
                        try channel.pipeline.syncOperations.addHandlers(
                            ByteToMessageHandler(lines), HandlerProgramOutput(program: program))
                    } catch {
                        promise.fail(error)
                    }
                    program.sendStart(start, stateDirectory: stateDirectory)
                    let logging = NIOPipeBootstrap(group: eventLoop).takingOwnershipOfDescriptor(input: errors)
                    logging.whenSuccess { channel in
                        try? channel.pipeline.syncOperations.addHandlers(
                            ByteToMessageHandler(LineCutter(maxLength: 16 << 10, cutsLongLines: true)),
                            HandlerProgramLog(logger: logger))
                    }
                    return promise.futureResult.map { (program, $0) }
                }
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
    }

    /// Forks and execs the program with three pipes; returns its pid and the host's ends (its input's write end,
    /// its output's and error's read ends).
    private static func spawn(path: String, handler: String) throws -> (pid_t, Int32, Int32, Int32) {
        var input: [Int32] = [0, 0], output: [Int32] = [0, 0], errors: [Int32] = [0, 0]
        guard rpcd_program_pipe(&input) == 0, rpcd_program_pipe(&output) == 0, rpcd_program_pipe(&errors) == 0 else {
            throw HandlerProgramError("cannot make its pipes: \(String(cString: strerror(errno)))")
        }
        let environment = [
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
            "RPCD_HANDLER=\(handler)", "RPCD_HANDLER_PROTOCOL=\(protocolVersion)",
        ]
        var pid: pid_t = 0
        let status = CStrings.with([path]) { argv in
            CStrings.with(environment) { envp in
                rpcd_program_spawn(path, argv, envp, input[0], output[1], errors[1], &pid)
            }
        }
        for end in [input[0], output[1], errors[1]] { close(end) }
        guard status == 0 else {
            for end in [input[1], output[0], errors[0]] { close(end) }
            throw HandlerProgramError("cannot start \(path): \(String(cString: strerror(status)))")
        }
        return (pid, input[1], output[0], errors[0])
    }

    private func sendStart(_ start: ModuleHostStart, stateDirectory: String?) {
        var params: [String: JSONValue] = [
            "protocol": .number(Self.protocolVersion), "handler": .string(start.handler),
            "service": .string(start.service ?? start.handler),
            "config": .object(start.config.mapValues(JSONValue.string)),
            "maxLineSize": .number(RPCLimits.maxFrameSize.defaultValue),
        ]
        if let stateDirectory { params["stateDirectory"] = .string(stateDirectory) }
        let message: JSONValue = ["jsonrpc": "2.0", "id": 0, "method": "rpcd.start", "params": .object(params)]
        write(message.serialized())
        flushWrites()
    }

    /// Serves through `outbox` from now on.
    func serve(_ outbox: ModuleLinkOutbox) {
        self.outbox = outbox
    }

    // MARK: Calls

    /// Sends a call of method `method` (an index into the declaration's methods) as `token`, now or once the
    /// non-concurrent calls before it allow.
    func call(token: UInt64, method: Int, params: ByteBuffer?) {
        guard let declaration else { return }
        // Bound and checked here, as a module's `RPCD_METHOD_BIND_PARAMS` are: what does not bind never reaches
        // the program.
        let bound: BoundParams
        do {
            bound = try declaration.binders[method].bind(params.flatMap { JSONValue(linkBuffer: $0) } ?? .null)
        } catch {
            outbox?.send(.error(token: token, code: Int64(error.code), message: error.message, data: error.data.map(\.linkBuffer)))
            return
        }
        let named = JSONValue.object(bound.members.filter { $0.value != .null })
        queued.append((token, method, ByteBuffer(bytes: named.serialized())))
        sendQueued()
    }

    /// rpcd gave up on `token`: the program is told, and its answer will be dropped by rpcd. A program must
    /// still answer (§5); one that has not `Timeout=` later is hung, and killed: its host ends as it did, and
    /// rpcd starts it again as after a crash. (Its host answers rpcd's pings for it, so they cannot tell.)
    func cancel(token: UInt64) {
        if let index = queued.firstIndex(where: { $0.token == token }) {
            queued.remove(at: index)
            let error = RPCError(code: RPCError.Code.callCancelled, message: "Call cancelled")
            outbox?.send(.error(token: token, code: Int64(error.code), message: error.message, data: nil))
            return
        }
        guard inFlight[token] != nil else { return }
        write(Array(#"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":\#(token)}}"#.utf8))
        if let hangAfter {
            channel.eventLoop.scheduleTask(in: hangAfter) { [self] in
                guard inFlight[token] != nil, !stopping, !hasExited else { return }
                logger.error(
                    "Handler program left a call unanswered for Timeout= after its rpc.cancel: it is hung; killing it",
                    metadata: [LogField.reason: "hung"])
                kill(pid, SIGKILL)
            }
        }
    }

    private func sendQueued() {
        guard let declaration else { return }
        while let next = queued.first {
            let concurrent = declaration.concurrent[next.method]
            let allowed = concurrent ? !inFlight.values.contains(false) : inFlight.isEmpty
            guard allowed else { return }
            queued.removeFirst()
            inFlight[next.token] = concurrent
            let method = declaration.descriptor.methods[next.method]
            var line = Array(#"{"jsonrpc":"2.0","id":\#(next.token),"method":"\#(declaration.name).\#(method.name)","params":"#.utf8)
            line += next.params.map { Array($0.readableBytesView) } ?? Array("{}".utf8)
            line.append(UInt8(ascii: "}"))
            write(line)
        }
    }

    // MARK: What the program writes

    /// One line of the program's standard output.
    func received(_ line: ByteBuffer) {
        // A line of whitespace only (a `\r` included) is ignored.
        if line.readableBytesView.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\t") }) {
            return
        }
        guard let message = try? JSONValue(parsing: Array(line.readableBytesView)), case .object(let members) = message,
              members["jsonrpc"] == .string("2.0") else {
            return garbage(line, "a line that is not a message")
        }
        let id = members["id"]?.intValue
        // Before its declaration a program says nothing but its answer to rpcd.start (§3): anything else refuses it.
        if declaration == nil, id != 0 {
            return refuse("sent a message before it declared itself: \(Self.head(line))")
        }
        if let method = members["method"]?.stringValue {
            guard members["id"] == nil, method == "rpc.event" else {
                return garbage(line, "a message rpcd does not take (only answers and rpc.event notifications)")
            }
            return emitted(members["params"], line: line)
        }
        guard let id, id >= 0 else { return garbage(line, "an answer without an integer id") }
        if id == 0 {
            guard declaration == nil else { return garbage(line, "a second answer to rpcd.start") }
            return declare(members)
        }
        answered(UInt64(id), members, line: line)
    }

    private func declare(_ members: [String: JSONValue]) {
        if let error = members["error"] {
            return refuse("refused to start: \(error["message"]?.stringValue ?? "(no message)")")
        }
        guard let result = members["result"] else { return refuse("answered rpcd.start with neither result nor error") }
        do {
            let declaration = try HandlerProgramDeclaration(result, serving: nil)
            self.declaration = declaration
            declared?.succeed(declaration)
            declared = nil
        } catch {
            refuse("declared itself wrongly: \(error.reason)")
        }
    }

    private func answered(_ token: UInt64, _ members: [String: JSONValue], line: ByteBuffer) {
        guard inFlight.removeValue(forKey: token) != nil else {
            return logger.warning(
                "Handler program answered a call that is not in flight", metadata: [LogField.error: "\(Self.head(line))"])
        }
        defer { sendQueued() }
        switch (members["result"], members["error"]) {
        case (.some(let result), nil):
            outbox?.send(.result(token: token, json: ByteBuffer(bytes: result.serialized())))
        case (nil, .some(let error)):
            guard let code = error["code"]?.intValue, let message = error["message"]?.stringValue else { fallthrough }
            // A program may not speak as rpcd (-32007 Access denied, say): of the reserved codes only -32602,
            // -32603 (its own failure) and -32011.
            if (-32768 ... -32000).contains(code),
               ![RPCError.Code.invalidParams, RPCError.Code.internalError, RPCError.Code.callCancelled].contains(code) {
                logger.warning("Handler program answered with a code rpcd reserves; the caller gets -32603", metadata: [LogField.error: "\(code)"])
                outbox?.send(.error(token: token, code: Int64(RPCError.Code.internalError), message: "Internal error", data: nil))
            } else {
                outbox?.send(.error(token: token, code: Int64(code), message: message, data: error["data"].map(\.linkBuffer)))
            }
        default:
            logger.warning("Handler program's answer is not a response; the caller gets -32603", metadata: [LogField.error: "\(Self.head(line))"])
            outbox?.send(.error(token: token, code: Int64(RPCError.Code.internalError), message: "Internal error", data: nil))
        }
    }

    private func emitted(_ params: JSONValue?, line: ByteBuffer) {
        guard let declaration, let event = params?["event"]?.stringValue, event.hasPrefix(declaration.name + "."),
              declaration.descriptor.events.contains(where: { declaration.name + "." + $0.name == event }) else {
            return garbage(line, "an event it does not declare")
        }
        let member = event.dropFirst(declaration.name.count + 1)
        let payload = params?["data"] ?? .null
        // The payload passes the enforced part of its schema (`type`, `enum`, `minimum`, `maximum`), as params do.
        if let checker = declaration.eventPayloads[String(member)], (try? checker.bind(.array([payload]))) == nil {
            return garbage(line, "an event whose payload does not match its declared schema")
        }
        outbox?.send(.emit(event: declaration.descriptor.name + "." + member, payload: ByteBuffer(bytes: payload.serialized())))
    }

    private func garbage(_ line: ByteBuffer, _ what: String) {
        guard let suppressed = garbageLog.admit() else { return }
        logger.warning(
            "Handler program wrote \(what); dropped",
            metadata: [LogField.error: "\(Self.head(line))", LogField.suppressed: "\(suppressed)"])
    }

    private static func head(_ line: ByteBuffer) -> String {
        String(decoding: line.readableBytesView.prefix(200), as: UTF8.self)
    }

    // MARK: Lifetime

    /// Queues a line for the program; `flushWrites` sends what is queued, at the end of the read (of the link,
    /// or of the program's output) that made it.
    private func write(_ bytes: [UInt8]) {
        var buffer = channel.allocator.buffer(capacity: bytes.count + 1)
        buffer.writeBytes(bytes)
        buffer.writeInteger(UInt8(ascii: "\n"))
        channel.write(buffer, promise: nil)
        unflushed = true
    }

    func flushWrites() {
        guard unflushed else { return }
        unflushed = false
        channel.flush()
    }

    /// A read of the program's output begins: its answers wait in the outbox until it ends.
    fileprivate func outputReadStarted() {
        guard !outputHeld, let outbox else { return }
        outbox.hold()
        outputHeld = true
    }

    /// The read of the program's output ended: its answers go to rpcd, the calls they let through to the program.
    fileprivate func outputReadEnded() {
        if outputHeld {
            outputHeld = false
            outbox?.release()
        }
        flushWrites()
    }

    /// Before the declaration: the handler is refused with `reason`.
    private func refuse(_ reason: String) {
        guard let declared else { return }
        self.declared = nil
        declared.fail(HandlerProgramError(reason))
    }

    /// How the program ended, once it has: set by the thread that waits for it, the only one that reaps it.
    private let termination = Mutex<(signal: Int32, code: Int32)?>(nil)

    /// Waits for the program's end on a thread of its own (its end, not its standard output's: a child it
    /// started may hold that open after it exited), and hands it to the loop.
    private func watchExit(on eventLoop: any EventLoop) {
        let pid = self.pid
        DispatchQueue(label: "rpcd.program-exit").async { [self] in
            var signal: Int32 = 0, code: Int32 = 0
            _ = rpcd_program_wait(pid, -1, &signal, &code)
            let ended = (signal: signal, code: code)
            termination.withLock { $0 = ended }
            eventLoop.execute { self.exited(signal: ended.signal, code: ended.code) }
        }
    }

    private var hasExited: Bool { termination.withLock { $0 } != nil }

    /// The program's standard output ended, or carried a line past the limit: a program that no longer speaks
    /// is ended (its end, `exited`, ends the host).
    func ended(_ problem: String?) {
        if let problem { logger.error("Handler program broke the protocol; ending it", metadata: [LogField.error: "\(problem)"]) }
        refuse(problem ?? "ended before it declared itself")
        guard !stopping else { return }
        if problem != nil { return _ = kill(pid, SIGKILL) }
        // Its output closed: it is ending, or it is of no more use. A second to exit by itself.
        let pid = self.pid
        channel.eventLoop.scheduleTask(in: .seconds(1)) { [self] in
            if !hasExited { kill(pid, SIGKILL) }
        }
    }

    /// The program ended. Unless rpcd stopped it, so does its host, the same way, so that rpcd answers for its
    /// calls and starts it again as after a module host's crash.
    private func exited(signal: Int32, code: Int32) {
        refuse("ended before it declared itself")
        guard !stopping else { return }
        let ending = signal != 0 ? "signal \(signal)" : "status \(code)"
        logger.error("Handler program ended; its module host ends with it", metadata: [LogField.termination: "\(ending)"])
        rpcd_program_exit_as(signal, code == 0 ? 1 : code)
    }

    /// rpcd stopped the handler (the link closed): the program's input closed (`closeInput`), and it has
    /// `stopGrace` to exit, then SIGTERM and `stopGrace` more, then SIGKILL. Blocks; from the host's main thread
    /// once its loop is done.
    func stop() {
        stopping = true
        for (deadline, signal) in [(Self.stopGrace, SIGTERM), (Self.stopGrace, SIGKILL), (Int32(-1), 0)] {
            var waited: Int32 = 0
            while !hasExited, deadline < 0 || waited < deadline {
                usleep(10_000)
                waited += 10
            }
            if hasExited { return }
            if signal != 0 { kill(pid, signal) }
        }
    }

    /// Closes the program's standard input: the start of `stop`. On the loop.
    func closeInput() {
        stopping = true
        flushWrites()
        channel.close(mode: .output, promise: nil)
    }
}

/// Why a program handler could not start.
struct HandlerProgramError: Error, CustomStringConvertible {
    var reason: String
    init(_ reason: String) { self.reason = reason }
    var description: String { reason }
}

/// Lines of the program's standard output to the program; its end to `ended`.
private final class HandlerProgramOutput: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let program: HandlerProgram

    init(program: HandlerProgram) {
        self.program = program
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        program.outputReadStarted()
        program.received(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        program.outputReadEnded()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        program.ended("\(error)")
    }

    func channelInactive(context: ChannelHandlerContext) {
        program.ended(nil)
    }
}

/// Lines of the program's standard error to the journal, with the handler's fields: `<N>` sets the level.
private final class HandlerProgramLog: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let logger: Logger
    private let limit = LogRateLimiter(burst: 100, per: .seconds(1))

    init(logger: Logger) {
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard limit.admit() != nil else { return }
        var text = String(decoding: unwrapInboundIn(data).readableBytesView, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        var level = Logger.Level.info
        if text.count >= 3, text.first == "<", let digit = text.dropFirst().first?.wholeNumberValue, digit <= 7,
           text.dropFirst(2).first == ">" {
            level = Logger.Level(syslogPriority: digit)
            text = String(text.dropFirst(3))
        }
        logger.log(level: level, "\(text)")
    }
}

/// Cuts a byte stream at line feeds: each line without its `\n`. A line longer than `maxLength` is an error
/// (the program's output), or is handed on in pieces of `maxLength` (`cutsLongLines`: its log). What is left
/// without a line feed at the end is dropped: a message is a line.
struct LineCutter: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    let maxLength: Int
    var cutsLongLines = false

    struct LineTooLong: Error, CustomStringConvertible {
        var limit: Int
        var description: String { "a line longer than \(limit) bytes" }
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - buffer.readerIndex
            if length > maxLength {
                // A log line's rest makes further entries; an output line past the limit is the program's error.
                guard cutsLongLines else { throw LineTooLong(limit: maxLength) }
                context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: maxLength)!))
                return .continue
            }
            let line = buffer.readSlice(length: length)!
            buffer.moveReaderIndex(forwardBy: 1)
            context.fireChannelRead(wrapInboundOut(line))
            return .continue
        }
        if buffer.readableBytes > maxLength {
            guard cutsLongLines else { throw LineTooLong(limit: maxLength) }
            context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: maxLength)!))
            return .continue
        }
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}
