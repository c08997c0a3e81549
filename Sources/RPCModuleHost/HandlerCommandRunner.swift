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

#if canImport(Glibc)
import Glibc
#endif

/// A command handler's calls, as its module host runs them: each call one command (`HandlerCommand`) in a
/// process group of its own, inside the host's walls (its user, cgroup, Landlock and seccomp, which a child
/// inherits), with a scrubbed environment and /dev/null for input.
///
/// As for a program, rpcd has bound and checked the params, applied access rules, `MaxConcurrency=` and
/// `Timeout=` before a call crosses the link; a timeout or a cancelled call arrives here as `cancel`, which kills
/// the command's whole group. What the runner adds is what a command needs: the argv (`arguments(for:)`, the
/// one place params become arguments), standard output capped at `MaxOutputSize=` (past it the group is killed)
/// and the tail of standard error for a failure's `data`. When the command itself ends, what is left of its
/// group is killed too (`rpcd_command_reap`): no child outlives its call. Confined to the host's event loop.
final class HandlerCommandRunner: @unchecked Sendable {
    /// How much of a failed command's standard error its error's `data` carries: the end, where the reason is.
    static let standardErrorTail = 4096
    /// After the command ended (its group killed), how long its pipes may stay open: a descendant that left the
    /// group could hold them for ever; the call is answered with what was read.
    static let pipeGrace = TimeAmount.milliseconds(100)

    private let commands: [HandlerCommand]
    private let binders: [ParamsBinder]
    private let handler: String
    private let service: String
    private let eventLoop: any EventLoop
    private let outbox: ModuleLinkOutbox
    private let logger: Logger
    private var running: [UInt64: RunningCommand] = [:]

    init(commands: [HandlerCommand], handler: String, service: String, eventLoop: any EventLoop, outbox: ModuleLinkOutbox, logger: Logger) {
        self.commands = commands
        self.binders = commands.map { ParamsBinder($0.descriptor.params) }
        self.handler = handler
        self.service = service
        self.eventLoop = eventLoop
        self.outbox = outbox
        self.logger = logger
    }

    /// The service the commands make, as the host reports it.
    static func descriptor(of commands: [HandlerCommand], service: String) -> RPCServiceDescriptor {
        RPCServiceDescriptor(
            name: service, version: "1", summary: "Command methods", methods: commands.map(\.descriptor), events: [])
    }

    /// Runs call `token` of method `method` (an index into the commands).
    func call(token: UInt64, method: Int, params: ByteBuffer?) {
        let command = commands[method]
        let arguments: [String]
        do {
            let bound = try binders[method].bind(params.flatMap { JSONValue(linkBuffer: $0) } ?? .null)
            arguments = try command.arguments(for: bound.members)
        } catch {
            return answer(token, .failure(error))
        }
        var output: [Int32] = [0, 0], errors: [Int32] = [0, 0]
        guard rpcd_program_pipe(&output) == 0 else { return failedToStart(token, command, errno) }
        guard rpcd_program_pipe(&errors) == 0 else {
            let error = errno
            for end in output { close(end) }
            return failedToStart(token, command, error)
        }
        let environment = [
            "PATH=" + HandlerCommand.searchPath.joined(separator: ":"), "LANG=C.UTF-8",
            "RPCD_HANDLER=\(handler)", "RPCD_METHOD=\(service).\(command.method)",
        ]
        var pid: pid_t = 0
        let status = CStrings.with(arguments) { argv in
            CStrings.with(environment) { envp in
                rpcd_command_spawn(command.program, argv, envp, output[1], errors[1], &pid)
            }
        }
        close(output[1])
        close(errors[1])
        guard status == 0 else {
            close(output[0])
            close(errors[0])
            return failedToStart(token, command, status)
        }
        let run = RunningCommand(pid: pid, command: command)
        running[token] = run
        read(output[0], into: run, token: token, isOutput: true)
        read(errors[0], into: run, token: token, isOutput: false)
        let loop = eventLoop
        let started = pid
        // A queue of its own, so a thread of its own (an overcommitting one): the global queue's few threads, each
        // blocked until its command ends, would hold back the ends of every other command behind two long ones.
        DispatchQueue(label: "rpcd.command-reap").async {
            var signal: Int32 = 0, code: Int32 = 0
            let reaped = rpcd_command_reap(started, &signal, &code)
            let termination: ProcessTermination =
                reaped < 0 ? .signalled(SIGKILL) : signal != 0 ? .signalled(signal) : .exited(code: code)
            loop.execute {
                run.termination = termination
                self.ended(token)
            }
        }
    }

    /// rpcd gave up on `token` (its timeout, or its caller's `rpc.cancel`): the command's group is killed.
    func cancel(token: UInt64) {
        guard let run = running[token] else { return }
        run.cancelled = true
        run.kill()
    }

    /// The link closed: every command still running is killed.
    func stopAll() {
        for run in running.values {
            run.cancelled = true
            run.kill()
        }
    }

    // MARK: One call

    private func read(_ descriptor: Int32, into run: RunningCommand, token: UInt64, isOutput: Bool) {
        let reader = CommandPipeReader { bytes in
            if isOutput {
                run.output.append(contentsOf: bytes.readableBytesView)
                if run.output.count > run.limit, !run.overflowed {
                    run.overflowed = true
                    run.kill()
                }
            } else {
                run.standardError.append(contentsOf: bytes.readableBytesView)
                if run.standardError.count > 2 * Self.standardErrorTail {
                    run.standardError.removeFirst(run.standardError.count - Self.standardErrorTail)
                }
            }
        } ended: { [self] in
            run.openPipes = max(0, run.openPipes - 1)
            ended(token)
        }
        // On the host's loop (the runner is confined to it), so the reader needs no sending across threads.
        let bootstrapped = NIOPipeBootstrap(group: eventLoop).takingOwnershipOfDescriptor(input: descriptor)
        bootstrapped.hop(to: eventLoop).assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success(let channel):
                run.pipes.append(channel)
                do {
                    try channel.pipeline.syncOperations.addHandler(reader)
                } catch {
                    channel.close(promise: nil)
                }
            case .failure(let error):
                logger.warning("Command's pipe could not be read", metadata: [LogField.error: "\(error)"])
                run.openPipes = max(0, run.openPipes - 1)
                ended(token)
            }
        }
    }

    /// Answers `token` once its command has ended and both pipes are read, or `pipeGrace` after it ended.
    private func ended(_ token: UInt64) {
        guard let run = running[token], let termination = run.termination else { return }
        if run.openPipes > 0 {
            guard run.grace == nil else { return }
            run.grace = eventLoop.scheduleTask(in: Self.pipeGrace) { [self] in
                run.openPipes = 0
                for pipe in run.pipes { pipe.close(promise: nil) }
                ended(token)
            }
            return
        }
        run.grace?.cancel()
        running[token] = nil
        answer(token, outcome(of: run, termination: termination))
    }

    private func outcome(of run: RunningCommand, termination: ProcessTermination) -> Result<JSONValue, RPCError> {
        if run.cancelled { return .failure(.callCancelled) }
        if run.overflowed { return .failure(.commandOutputTooLarge(limit: run.limit)) }
        let tail = String(decoding: run.standardError.suffix(Self.standardErrorTail), as: UTF8.self)
        switch termination {
        case .signalled:
            return .failure(.commandFailed(exitStatus: nil, signal: termination.signalName, standardError: tail))
        case .exited(let code):
            guard code == 0 || run.successExitStatus.contains(Int(code)) else {
                return .failure(.commandFailed(exitStatus: Int(code), signal: nil, standardError: tail))
            }
        }
        guard let result = run.command.result(from: run.output) else {
            logger.warning("Command's output is not the JSON its Output= promises; the caller gets -32603")
            return .failure(RPCError(code: RPCError.Code.internalError, message: "Internal error"))
        }
        return .success(result)
    }

    private func answer(_ token: UInt64, _ outcome: Result<JSONValue, RPCError>) {
        switch outcome {
        case .success(let result):
            outbox.send(.result(token: token, json: ByteBuffer(bytes: result.serialized())))
        case .failure(let error):
            outbox.send(.error(token: token, code: Int64(error.code), message: error.message, data: error.data.map(\.linkBuffer)))
        }
    }

    private func failedToStart(_ token: UInt64, _ command: HandlerCommand, _ error: Int32) {
        logger.error(
            "Command could not be started; the caller gets -32603",
            metadata: [LogField.file: "\(command.program)", LogField.error: "\(String(cString: strerror(error)))"])
        answer(token, .failure(RPCError(code: RPCError.Code.internalError, message: "Internal error")))
    }
}

/// One call's command while it runs. Confined to the host's event loop (`@unchecked Sendable` only to travel
/// in the closures that hop back to it).
private final class RunningCommand: @unchecked Sendable {
    let pid: pid_t
    let command: HandlerCommand
    var limit: Int { command.maxOutputSize }
    var successExitStatus: [Int] { command.successExitStatus }
    var output: [UInt8] = []
    var standardError: [UInt8] = []
    var openPipes = 2
    var pipes: [any Channel] = []
    var termination: ProcessTermination?
    var cancelled = false
    var overflowed = false
    var grace: Scheduled<Void>?

    init(pid: pid_t, command: HandlerCommand) {
        self.pid = pid
        self.command = command
    }

    /// Kills the command's group, unless it has been reaped (its group id could then be someone else's).
    func kill() {
        guard termination == nil else { return }
        _ = Glibc.kill(-pid, SIGKILL)
    }
}

/// Reads one pipe of a command to its end.
private final class CommandPipeReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let received: (ByteBuffer) -> Void
    private let ended: () -> Void
    private var done = false

    init(received: @escaping (ByteBuffer) -> Void, ended: @escaping () -> Void) {
        self.received = received
        self.ended = ended
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            ended()
        }
        context.fireChannelInactive()
    }
}
