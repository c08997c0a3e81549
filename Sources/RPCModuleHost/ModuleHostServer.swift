import CRPCDHostSupport
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

/// The module host process's end of the link: loads the module rpcd names (`start`), runs it in a
/// `ModuleInstance` exactly as rpcd itself runs an in-process one (same host function table, same worker pool
/// for `RPCD_METHOD_MAY_BLOCK`, same handle checks), and turns link messages into calls (`ModuleCall`) and
/// answers, log entries and events into link messages.
///
/// Methods without `RPCD_METHOD_MAY_BLOCK` run on the host's one event loop, which also answers rpcd's pings:
/// a module that blocks it stops the pongs, and rpcd kills the host. When the link closes (rpcd stopped, or
/// retired this handler) the instance is retired and the process exits. Runs on the link's event loop.
final class ModuleHostServer: ChannelInboundHandler {
    /// The messages of one read burst (`ModuleLinkCodec`).
    typealias InboundIn = [ModuleLinkMessage]
    typealias OutboundOut = [ModuleLinkMessage]

    private enum State {
        case awaitingStart
        /// Answers and events go out through the outbox: one write for all a read's calls answered, at the
        /// read's end (the outbox is held from its first call to `channelReadComplete`).
        case serving(ModuleInstance, ModuleLinkOutbox)
        /// A program handler's program: calls become lines (`HandlerProgram`).
        case servingProgram(HandlerProgram, ModuleLinkOutbox)
        /// The program is starting: it has not declared itself yet.
        case startingProgram
        /// A command handler's methods: calls become commands (`HandlerCommandRunner`).
        case servingCommands(HandlerCommandRunner)
        case stopped
    }

    private var state = State.awaitingStart
    private let pool: WorkerPool
    /// What `main` applied before any thread started; a failure is the start's failure.
    private let sandbox: Result<ModuleHostSandbox.Outcome, ModuleHostSandboxError>

    /// What the host runs.
    private let kind: ModuleHostKind
    /// The module file rpcd handed over, opened and checked (`ModuleHostArguments.moduleFile`); nil unless it
    /// runs a module.
    private let moduleFile: Int32?
    /// The handler's `StateDirectory=` (rpcd made it, and gave it to this host's user), handed to the module.
    private let stateDirectory: String?
    /// A program handler's directory for its state (`rpcd.start`'s `stateDirectory`): its `StateDirectory=`,
    /// else the first of `ReadWritePaths=`.
    private let programStateDirectory: String?

    init(
        pool: WorkerPool, sandbox: Result<ModuleHostSandbox.Outcome, ModuleHostSandboxError>, moduleFile: Int32?,
        kind: ModuleHostKind = .module, handlerSandbox: HandlerSandbox = HandlerSandbox()
    ) {
        self.pool = pool
        self.sandbox = sandbox
        self.kind = kind
        self.moduleFile = moduleFile
        self.stateDirectory = handlerSandbox.stateDirectory
        self.programStateDirectory = handlerSandbox.stateDirectory ?? handlerSandbox.readWritePaths.first
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // What the burst's calls answer at once waits for its end: one write for all (`channelReadComplete`).
        if case .serving(_, let outbox) = state { outbox.hold() }
        for message in unwrapInboundIn(data) { received(message, context: context) }
    }

    /// One message, by its kind first: a call is not copied into a pair with the state to be matched.
    private func received(_ message: ModuleLinkMessage, context: ChannelHandlerContext) {
        switch message {
        case .call(let token, let method, let params):
            switch state {
            case .serving(let service, let outbox):
                call(service, token: token, method: Int(method), params: params, outbox: outbox)
            case .servingProgram(let program, _): program.call(token: token, method: Int(method), params: params)
            case .servingCommands(let runner): runner.call(token: token, method: Int(method), params: params)
            case .awaitingStart, .startingProgram, .stopped: outOfStep(context)
            }
        case .cancel(let token):
            switch state {
            case .serving(let service, _): service.cancel(key: token)
            case .servingProgram(let program, _): program.cancel(token: token)
            case .servingCommands(let runner): runner.cancel(token: token)
            case .awaitingStart, .startingProgram, .stopped: outOfStep(context)
            }
        case .start(let json):
            guard case .awaitingStart = state else { return outOfStep(context) }
            start(json, context: context)
            // Calls behind it in this burst are answered together too.
            if case .serving(_, let outbox) = state { outbox.hold() }
        case .ping(let sequence):
            context.writeAndFlush(wrapOutboundOut([.pong(sequence)]), promise: nil)
        case .ready, .startFailed, .result, .error, .log, .emit, .pong:
            outOfStep(context)
        }
    }

    /// rpcd never sends anything else: the link is out of step, and the host has no way back.
    private func outOfStep(_ context: ChannelHandlerContext) {
        context.close(promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .serving(_, let outbox) = state { outbox.release() }
        if case .servingProgram(let program, _) = state { program.flushWrites() }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .serving(let service, let outbox) = state {
            outbox.release()
            service.retire()
        }
        if case .servingCommands(let runner) = state { runner.stopAll() }
        HandlerProgram.current?.closeInput()
        state = .stopped
        context.fireChannelInactive()
    }

    private func start(_ json: ByteBuffer, context: ChannelHandlerContext) {
        guard let start = JSONValue(linkBuffer: json).flatMap(ModuleHostStart.init(json:)) else {
            return fail("the start message is not valid", context: context)
        }
        let channel = context.channel
        let outbox = ModuleLinkOutbox(channel: channel)
        var logger = Logger(label: "rpcd") { _ in ModuleLinkLogHandler(channel: channel) }
        logger.logLevel = .debug
        ModuleLog.logger = logger
        switch sandbox {
        case .failure(let error): return fail("\(error)", context: context)
        case .success(.noLandlock):
            logger.warning("Module host runs without a file system sandbox: Landlock is unavailable")
        case .success(.landlock): break
        }
        switch kind {
        case .program: return startProgram(start, outbox: outbox, logger: logger, context: context)
        case .commands: return startCommands(start, outbox: outbox, logger: logger, context: context)
        case .module: break
        }
        guard let moduleFile else { return fail("no module file was handed over", context: context) }
        do {
            let image = try ModuleLoader().load(checkedFile: moduleFile, path: start.modulePath)
            if start.checkOnly {
                // `rpcd --check-config`: what loading tells, without the module's init (no file opened, no thread).
                try image.checkConfig(of: start.configuration)
                let descriptor = RPCServiceDescriptor(
                    name: start.service ?? image.name, version: image.version, summary: image.summary,
                    methods: image.methods, events: image.events)
                state = .stopped
                context.writeAndFlush(wrapOutboundOut([.ready(descriptor.linkJSON.linkBuffer)]), promise: nil)
                return
            }
            var configuration = start.configuration
            configuration.sandbox.stateDirectory = stateDirectory
            let service = try ModuleInstance(image: image, configuration: configuration, pool: pool, logger: logger) {
                event, payload in
                outbox.send(.emit(event: event, payload: payload))
            }
            state = .serving(service, outbox)
            context.writeAndFlush(wrapOutboundOut([.ready(service.descriptor.linkJSON.linkBuffer)]), promise: nil)
        } catch {
            fail(error.reason, context: context)
        }
    }

    /// Starts the program, and reports its declaration as a module's descriptor once it has declared itself.
    private func startProgram(_ start: ModuleHostStart, outbox: ModuleLinkOutbox, logger: Logger, context: ChannelHandlerContext) {
        state = .startingProgram
        HandlerProgram.start(
            path: start.modulePath, start: start, stateDirectory: programStateDirectory, eventLoop: context.eventLoop, logger: logger
        ).assumeIsolated().whenComplete { result in
            switch result {
            case .success(let (program, declaration)):
                var descriptor = declaration.descriptor
                descriptor.name = start.service ?? declaration.name
                if let problem = Self.configProblem(start, declaration: declaration) {
                    program.closeInput()
                    return self.fail(problem, context: context)
                }
                if start.checkOnly {
                    self.state = .stopped
                    program.closeInput()
                } else {
                    program.serve(outbox)
                    self.state = .servingProgram(program, outbox)
                }
                context.writeAndFlush(self.wrapOutboundOut([.ready(descriptor.linkJSON.linkBuffer)]), promise: nil)
            case .failure(let error):
                HandlerProgram.current?.closeInput()
                self.fail("\((error as? HandlerProgramError)?.reason ?? "\(error)")", context: context)
            }
        }
    }

    /// Serves a command handler's methods: nothing to start until a call comes.
    private func startCommands(_ start: ModuleHostStart, outbox: ModuleLinkOutbox, logger: Logger, context: ChannelHandlerContext) {
        guard !start.commands.isEmpty else { return fail("a command handler needs [Command] sections", context: context) }
        if let entry = start.configEntries.first(where: { !$0.value.isEmpty }) {
            return fail("\(entry.file):\(entry.line): [Config] \(entry.key)= is not read: command methods take no [Config]", context: context)
        }
        let service = start.service ?? start.handler
        let descriptor = HandlerCommandRunner.descriptor(of: start.commands, service: service)
        if start.checkOnly {
            state = .stopped
        } else {
            state = .servingCommands(HandlerCommandRunner(
                commands: start.commands, handler: start.handler, service: service, eventLoop: context.eventLoop,
                outbox: outbox, logger: logger))
        }
        context.writeAndFlush(wrapOutboundOut([.ready(descriptor.linkJSON.linkBuffer)]), promise: nil)
    }

    /// The first `[Config]` assignment the program's declared keys refuse (an undeclared key, a required one
    /// missing, a value that is not of its type), with its file and line; nil when it declared none.
    private static func configProblem(_ start: ModuleHostStart, declaration: HandlerProgramDeclaration) -> String? {
        guard let keys = declaration.config else { return nil }
        for entry in start.configEntries where !entry.value.isEmpty {
            guard let key = keys.first(where: { $0.name == entry.key }) else {
                return "\(entry.file):\(entry.line): [Config] \(entry.key)= is not a key the program reads (it declares: \(keys.map(\.name).joined(separator: ", ")))"
            }
            let type = key.schema["type"]?.stringValue
            let fits = switch type {
            case "integer": Int(entry.value) != nil
            case "number": Double(entry.value) != nil
            case "boolean": ["true", "false", "yes", "no", "1", "0", "on", "off"].contains(entry.value.lowercased())
            default: true
            }
            if !fits { return "\(entry.file):\(entry.line): [Config] \(entry.key)=\(entry.value) is not \(type == "integer" ? "an" : "a") \(type ?? "")" }
        }
        for key in keys where key.required && start.config[key.name] == nil {
            return "[Config] needs \(key.name)=, which the program requires"
        }
        return nil
    }

    private func fail(_ reason: String, context: ChannelHandlerContext) {
        state = .stopped
        context.writeAndFlush(wrapOutboundOut([.startFailed(reason)])).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    private func call(_ service: ModuleInstance, token: UInt64, method: Int, params: ByteBuffer?, outbox: ModuleLinkOutbox) {
        guard service.descriptor.methods.indices.contains(method) else {
            let error = RPCError.methodNotFound("#\(method)")
            return outbox.send(.error(token: token, code: Int64(error.code), message: error.message, data: nil))
        }
        let call = ModuleCall(
            methodIndex: method, name: service.methodNames[method],
            params: params, eventLoop: outbox.eventLoop)
        // rpcd's token names the call in the instance too: a cancellation finds it by that (`cancel(key:)`).
        service.enter(call, answer: LinkAnswer(token: token, outbox: outbox), key: token)
    }
}

/// A call's answer as a link message, sent back to rpcd by the token rpcd gave the call.
private struct LinkAnswer: ModuleCallAnswer {
    let token: UInt64
    let outbox: ModuleLinkOutbox

    func succeed(rawJSON: ByteBuffer) {
        outbox.send(.result(token: token, json: rawJSON))
    }

    func fail(_ error: any Error) {
        let error = RPCError(from: error)
        outbox.send(.error(token: token, code: Int64(error.code), message: error.message, data: error.data.map(\.linkBuffer)))
    }

    /// rpcd keeps a call it gave up on (cancelled, or past `Timeout=`) on its books until the host is done
    /// with it, and a timed-out one in its `MaxConcurrency=` slot: the module's answer is dropped here, but
    /// rpcd is told the call is over, in the fewest bytes (it drops whatever comes).
    func moduleFinishedAbandonedCall() {
        fail(RPCError.callCancelled)
    }
}

extension Error {
    /// What a person reads of a failure to start a module.
    fileprivate var reason: String {
        (self as? ModuleLoadError)?.reason ?? "\(self)"
    }
}
