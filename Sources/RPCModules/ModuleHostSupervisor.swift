import Logging
import NIOCore
import RPCBinding
import RPCCore
import RPCJSON
import RPCLogging
import RPCModuleHost
import RPCModuleLink
import RPCProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs one handler's module in a module host process and keeps it running: spawns the host, forwards calls
/// over the link and routes the answers back, and when the host dies (a signal, an exit, a kill for hanging)
/// answers its calls in flight at once with -32005, logs the death once, and starts a new host after a
/// backoff, up to a start limit (`ModuleHostPolicy`).
///
/// `Timeout=` and `MaxConcurrency=` are enforced here, before a call crosses the link. A call past `Timeout=` is
/// one slow call: its caller gets -32003, the module is told to cancel it, and it keeps its slot until the
/// module answers. Only a host that answers no ping for `ModuleHostPolicy.pingTimeout` hangs: it is killed
/// (SIGKILL) and restarted. A host's end is seen from its process (`ProcessWatcher`), not from its link. rpcd's
/// event loops never wait on a host: every link is a non-blocking channel, and hosts are reaped off the loops.
///
/// What becomes of each call (admitted or refused, cancelled, timed out, answered, its reply skipped, failed
/// with its host) and the host's phase that decides it are `LinkedCalls`' to say, one event per acquisition of
/// the lock; this class does what it says: answers callers, sends on the link, gives charges back, starts and
/// stops hosts. Thread-safe.
final class ModuleHostSupervisor: RPCCancellationTarget {
    let configuration: HandlerConfiguration
    let modulePath: String
    private let start: ModuleHostStart
    private let executable: String
    private let walls: HostWalls
    private let loop: any EventLoop
    private let events: RPCEventHub
    private let policy: ModuleHostPolicy
    private let logger: Logger
    private let state: Mutex<State>
    /// Hosts that died on their own, and hosts rpcd killed because they hung (for `rpcd.info`).
    let crashes = Atomic<Int>(0)
    let hangs = Atomic<Int>(0)
    /// Hosts started after the first.
    let restarts = Atomic<Int>(0)

    /// The current host process, from its spawn until it is reaped.
    private struct Host {
        var attempt: UInt64
        var process: ModuleHostProcess
        /// Its cgroup, where rpcd has them: what it started ends with it.
        var cgroup: HostCgroup?
        /// rpcd's end of the link, once attached.
        var channel: (any Channel)?
        /// When it last showed it is alive: a pong, or an event or log line (a host that sends those faster than
        /// rpcd takes them has its pong waiting behind them on the link, and is not hung).
        var lastPong = NIODeadline.now()
        /// Why rpcd killed it (it hung); nil while it dies, if it does, on its own.
        var killReason: String?
    }

    /// Who waits for a call on the link: the call as routed, and its responder. What the supervisor needs of
    /// the call is read through it, one reference held per call rather than one per field.
    private struct Caller {
        let call: RPCCall
        let responder: RPCResponder
        var method: String { call.request.method }
        /// The caller's connection: its peer's account is charged for the copy of the params the link and the
        /// host hold until the host answers (`LinkedCalls.Call.linkCharge`; `PeerLedger`: one account for
        /// everything rpcd holds for a peer), and its log is rate-limited per peer.
        var connection: RPCConnectionInfo { call.connection }
        var account: PeerAccount { call.connection.account }
        /// The caller's connection's loop, where a reply's charge passes to the connection's output.
        var eventLoop: any EventLoop { call.eventLoop }
        /// The caller's connection's output, which takes the answers of one read of the link as one batch.
        var output: (any RPCConnectionOutput)? { call.output }
    }

    /// The calls on the link and the host's phase; calls go out through the outbox, in order with their
    /// cancellations.
    private typealias Calls = LinkedCalls<Caller, ModuleLinkOutbox>

    private struct State {
        var calls: Calls
        var host: Host?
        var attempt: UInt64 = 0
        /// When each start within the start-limit interval happened.
        var starts: [NIODeadline] = []
        /// When each death within the start-limit interval happened: the crashes in a row, whose count sets
        /// the backoff (counting starts instead would not double the second restart of a host that ran long
        /// before it began to crash, its first start being out of the interval).
        var deaths: [NIODeadline] = []
        /// The interface the first host declared; every later host must declare the same.
        var descriptor: RPCServiceDescriptor?
        /// The first start's, until it is serving or has failed.
        var firstStart: EventLoopPromise<RPCServiceDescriptor>?
        var pinger: RepeatedTask?
        var pingSequence: UInt64 = 0
    }

    init(
        configuration: HandlerConfiguration, modulePath: String, executable: String, walls: HostWalls = .processOnly,
        loop: any EventLoop, events: RPCEventHub, logger: Logger, policy: ModuleHostPolicy = .standard
    ) {
        self.configuration = configuration
        self.modulePath = modulePath
        self.start = ModuleHostStart(modulePath: modulePath, configuration: configuration)
        self.executable = executable
        self.walls = walls
        self.loop = loop
        self.events = events
        self.policy = policy
        self.state = Mutex(State(calls: Calls(maxConcurrency: configuration.maxConcurrency)))
        var logger = logger
        logger[metadataKey: LogField.handler] = "\(configuration.name)"
        logger[metadataKey: LogField.module] = "\(modulePath.split(separator: "/").last ?? "")"
        self.logger = logger
    }

    /// Starts the first host; the future holds the module's descriptor once it serves, or why it could not
    /// start. Never blocks: several handlers' hosts start side by side.
    func launchFirst() -> EventLoopFuture<RPCServiceDescriptor> {
        let promise = loop.makePromise(of: RPCServiceDescriptor.self)
        state.withLock { $0.firstStart = promise }
        launch()
        return promise.futureResult
    }

    // MARK: Calls

    func handle(_ call: RPCCall, responder: RPCResponder, service: String) {
        // What the call makes rpcd and the host hold besides its frame: the link's copy of its params, then the
        // host's, until the host answers. Charged to the caller's peer like a frame, refused like one.
        let account = call.connection.account
        let linkCharge = ModuleLinkMessage.callFrameOverhead + (call.params?.readableBytes ?? 0)
        guard account.chargeCallBound(linkCharge) else { return responder.fail(RPCError.serverBusy(limit: account.shareLimit)) }
        let admission = state.withLock { state in
            state.calls.admit(Caller(call: call, responder: responder), linkCharge: linkCharge)
        }
        let token: UInt64
        let outbox: ModuleLinkOutbox
        switch admission {
        case .send(let sent, let link):
            (token, outbox) = (sent, link)
        case .busy:
            account.releaseCallBound(linkCharge)
            return responder.fail(RPCError.serviceBusy(service))
        case .unavailable(let reason):
            account.releaseCallBound(linkCharge)
            return responder.fail(RPCError.serviceUnavailable(service, handler: configuration.name, reason: reason))
        }
        if let timeout = configuration.timeout {
            let task = call.eventLoop.scheduleTask(in: timeout.timeAmount) { self.timedOut(token, after: timeout) }
            if !state.withLock({ $0.calls.timerStarted(task, for: token) }) { task.cancel() }
        }
        // Told by token only if the caller gives up, which nearly no call does: no closure per call.
        call.onCancel(tell: self, token: token)
        outbox.send(.call(token: token, method: UInt32(call.methodIndex), params: call.params))
    }

    /// The caller gave up (the router answered it -32011): its slot is free, and the host is told.
    func callCancelled(token: UInt64) {
        guard let abandonment = state.withLock({ $0.calls.callerCancelled(token) }) else { return }
        abandonment.timer?.cancel()
        abandonment.cancelOn?.send(.cancel(token: token))
    }

    /// `Timeout=` passed: the caller gets -32003 and the module is told as for a cancellation; the call keeps
    /// its slot until the module answers. A module that overruns is slow, not hung: the pings tell that.
    private func timedOut(_ token: UInt64, after timeout: Duration) {
        guard let (caller, outbox) = state.withLock({ $0.calls.timedOut(token) }) else { return }
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        logger.warning("Call timed out", metadata: [LogField.method: "\(caller.method)"])
        caller.responder.fail(RPCError.timeout(after: milliseconds))
        outbox?.send(.cancel(token: token))
    }

    /// The host answered call `token` (`nil`: with a result that is not one JSON value); the answer goes to its
    /// caller with the others of the same read of the link (`answers`), unless the caller has its answer already.
    private func answered(_ token: UInt64, _ outcome: RPCOutcome?, attempt: UInt64, answers: ModuleLinkAnswers) {
        let finished = state.withLock { state in state.host?.attempt == attempt ? state.calls.answered(token) : nil }
        guard let finished else { return }
        carryOut(finished) { call in
            if call.callerAnswered {
                releaseCharges(of: call)
            } else {
                deliver(outcome, of: call, answers: answers)
            }
        }
    }

    /// Does what a call taken off the books asks: its timer cancelled, its caller answered by `answer`, which
    /// gives back its charges; then a retired host whose last call this was stopped (after the answer: closing
    /// the link ends the read whose answers are being kept, and hands them over).
    private func carryOut(_ finished: Calls.Finished, answer: (Calls.Call) -> Void) {
        finished.call.timer?.cancel()
        answer(finished.call)
        if finished.drained { stopHost() }
    }

    /// Gives back what the call held outside its connection: its copy on the link, its reply so far.
    private func releaseCharges(of call: Calls.Call) {
        call.caller.account.releaseCallBound(call.charged)
    }

    /// A frame the link is about to gather across reads, `length` bytes, whose payload starts with `head`: a
    /// reply is charged to its caller as it arrives, so what rpcd holds of it is the caller's from its first
    /// byte. One the caller's share cannot cover is answered -32009 at once and skipped as it arrives, never
    /// held; one nobody waits for any more (the caller timed out, cancelled or left) is skipped. Other
    /// messages are the host's own (descriptor, log entries, events, bounded by the link's frame limit).
    func admit(head: ByteBuffer, length: Int, attempt: UInt64) -> ModuleLinkFrameReceiver.Admission {
        guard let token = ModuleLinkMessage.answerToken(head: head) else { return .hold }
        let arrival = state.withLock { state -> Calls.ReplyArrival in
            guard state.host?.attempt == attempt else { return .skip(nil) }
            return state.calls.replyArriving(token, length: length) { caller in
                if caller.account.isClosed { return .callerLeft }
                return caller.account.chargeCallBound(length) ? .charged : .overShare
            }
        }
        switch arrival {
        case .hold:
            return .hold
        case .skip(let finished):
            if let finished { carryOut(finished) { releaseCharges(of: $0) } }
        case .refuse(let finished):
            carryOut(finished) { call in
                releaseCharges(of: call)
                refuseReply(of: call.caller)
            }
        }
        return .skip
    }

    /// The caller's share cannot cover its reply: -32009, logged at most as the peer's log budget allows.
    private func refuseReply(of call: Caller) {
        call.connection.rateLimitedLogger?.notice(
            "Module's reply exceeds the caller's share of MaxBufferedBytesPerPeer=; answered -32009",
            metadata: [LogField.handler: "\(configuration.name)", LogField.method: "\(call.method)",
                       LogField.limit: "\(call.account.shareLimit)"])
        call.responder.fail(RPCError.serverBusy(limit: call.account.shareLimit))
    }

    /// Hands the host's answer to the caller. A result is charged to the caller's peer from the link on, as the
    /// frame it will become is (one gathered across reads since its first byte, `admit`): one the peer's share
    /// cannot cover is refused (-32009), not held. The charge is given back on the connection's loop, right
    /// before the connection's output charges the reply itself.
    private func deliver(_ outcome: RPCOutcome?, of call: Calls.Call, answers: ModuleLinkAnswers) {
        let caller = call.caller
        let responder = caller.responder
        let failure: RPCError
        switch outcome {
        case .success(let json):
            // A reply whole in one read is charged now, as its copy on the link is given back: one exchange.
            let held: Int
            if call.replyCharge > 0 {
                held = call.replyCharge
                caller.account.releaseCallBound(call.linkCharge)
            } else {
                held = json.readableBytes
                guard caller.account.exchangeCallBound(release: call.linkCharge, charge: held) else {
                    return refuseReply(of: caller)
                }
            }
            return answers.deliver(on: caller.eventLoop, to: caller.output) { [account = caller.account] in
                account.releaseCallBound(held)
                responder.succeed(rawJSON: json)
            }
        case .failure(let error):
            failure = error
        case nil:
            logger.error("Module answered with invalid JSON", metadata: [LogField.method: "\(caller.method)"])
            failure = RPCError.internalError
        }
        releaseCharges(of: call)
        answers.deliver(on: caller.eventLoop, to: caller.output) { responder.fail(failure) }
    }

    // MARK: Host life

    /// Spawns a host (first start, or a restart after the backoff) and sends it its module.
    private func launch() {
        let attempt = state.withLock { state -> UInt64? in
            guard state.calls.hostStarting() else { return nil }
            state.attempt += 1
            let now = NIODeadline.now()
            state.starts = state.starts.filter { now - $0 < policy.startLimitInterval.timeAmount } + [now]
            return state.attempt
        }
        guard let attempt else { return }
        if attempt > 1 { restarts.add(1, ordering: .relaxed) }
        let spawned: (ModuleHostProcess, Int32)
        let handed: [Int32]
        do {
            handed = try ModuleHostArguments.openServed(modulePath, configuration: configuration)
        } catch {
            return startFailed(error.reason)
        }
        defer { for file in handed { close(file) } }
        let prepared: PreparedHostWalls
        do {
            prepared = try walls.prepare(handler: configuration.name, sandbox: configuration.sandbox)
        } catch {
            return startFailed("\(error)")
        }
        do {
            let arguments = ModuleHostArguments(
                handler: configuration.name, modulePath: modulePath, sandbox: configuration.sandbox,
                kind: configuration.hostKind)
            spawned = try ModuleHostProcess.spawn(
                executable: executable, arguments: arguments.arguments, handing: handed, walls: prepared.walls)
            prepared.spawned(true)
        } catch {
            prepared.spawned(false)
            return startFailed("\(error)")
        }
        let (process, link) = spawned
        state.withLock { $0.host = Host(attempt: attempt, process: process, cgroup: prepared.cgroup) }
        process.watch { termination in self.hostEnded(attempt: attempt, termination) }
        ModuleHostProcess.attach(link: link, on: loop, admission: { [weak self] head, length in
            self?.admit(head: head, length: length, attempt: attempt) ?? .skip
        }) {
            ModuleLinkClient(supervisor: self, attempt: attempt)
        }
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    self.state.withLock { state in
                        if state.host?.attempt == attempt { state.host?.channel = channel }
                    }
                    channel.writeAndFlush([ModuleLinkMessage.start(self.start.json.linkBuffer)], promise: nil)
                case .failure:
                    process.kill()
                }
            }
        loop.scheduleTask(in: policy.startTimeout.timeAmount) {
            let stillStarting = self.state.withLock { state -> Bool in
                guard state.host?.attempt == attempt, case .starting = state.calls.phase else { return false }
                return true
            }
            if stillStarting { self.kill(reason: "hung", detail: "its module did not start within \(self.policy.startTimeout)") }
        }
    }

    /// The module could not be started at all (no host, or the module refused): down until the next reload.
    private func startFailed(_ reason: String) {
        let first = state.withLock { state -> EventLoopPromise<RPCServiceDescriptor>? in
            state.calls.failed(reason: reason)
            defer { state.firstStart = nil }
            return state.firstStart
        }
        if let first {
            first.fail(ModuleHostStartError(reason: reason))
        } else {
            logger.error(
                "Module host could not start the module; the handler stays down until the next reload",
                metadata: [LogField.error: "\(reason)"])
        }
    }

    /// A link message from host `attempt`; answers to calls go through `answers`, the read burst's. Only the
    /// current host is heard: the link of one that died may still be held by a process it left behind, which
    /// must not answer the next host's calls, emit its events or stop it.
    func received(_ message: ModuleLinkMessage, attempt: UInt64, answers: ModuleLinkAnswers) {
        switch message {
        case .ready(let json):
            do {
                ready(try RPCServiceDescriptor(linkBuffer: json), attempt: attempt)
            } catch {
                // As for the messages below, only the current host is heard.
                guard state.withLock({ $0.host?.attempt == attempt }) else { return }
                kill(reason: "crashed", detail: "it sent an invalid descriptor (\(error))")
            }
        case .result(let token, let json):
            let valid = json.withUnsafeReadableBytes { JSONValidation.isSingleValue($0) }
            answered(token, valid ? .success(json) : nil, attempt: attempt, answers: answers)
        case .error(let token, let code, let message, let data):
            let value = data.flatMap { JSONValue(linkBuffer: $0) }
            answered(token, .failure(RPCError(code: Int(code), message: message, data: value)), attempt: attempt, answers: answers)
        case .pong:
            state.withLock { state in
                if state.host?.attempt == attempt { state.host?.lastPong = .now() }
            }
        case .startFailed, .log, .emit, .start, .call, .cancel, .ping:
            let current = state.withLock { state -> Bool in
                guard state.host?.attempt == attempt else { return false }
                state.host?.lastPong = .now()
                return true
            }
            guard current else { return }
            switch message {
            case .startFailed(let reason):
                startFailed(reason)
            case .log(let level, let message, let fields):
                var metadata: Logger.Metadata = [:]
                for field in fields { metadata[field.name] = "\(field.value)" }
                logger.log(level: Logger.Level(syslogPriority: Int(level)), "\(message)", metadata: metadata)
            case .emit(let event, let payload):
                emitted(event, payload: payload)
            default:
                kill(reason: "crashed", detail: "it sent rpcd a message only rpcd sends")
            }
        }
    }

    private func ready(_ descriptor: RPCServiceDescriptor, attempt: UInt64) {
        enum Outcome {
            case first(EventLoopPromise<RPCServiceDescriptor>)
            case restarted(pid_t)
            case changed
            case stale
        }
        let outcome = state.withLock { state -> Outcome in
            guard let host = state.host, host.attempt == attempt, case .starting = state.calls.phase,
                  let channel = host.channel else { return .stale }
            if let expected = state.descriptor, expected != descriptor { return .changed }
            state.descriptor = descriptor
            state.calls.hostReady(on: ModuleLinkOutbox(channel: channel))
            state.host?.lastPong = .now()
            state.pinger = loop.scheduleRepeatedTask(initialDelay: policy.pingInterval.timeAmount, delay: policy.pingInterval.timeAmount) {
                [weak self] _ in self?.ping()
            }
            if let first = state.firstStart {
                state.firstStart = nil
                return .first(first)
            }
            return .restarted(host.process.pid)
        }
        switch outcome {
        case .first(let promise):
            promise.succeed(descriptor)
        case .restarted(let pid):
            logger.notice("Module host restarted", metadata: [LogField.pid: "\(pid)"])
        case .changed:
            startFailed("the module file changed its interface; reload rpcd to serve the new one")
            kill(reason: "stopped", detail: "its module changed")
        case .stale:
            break
        }
    }

    /// An event the module emitted: published when its service declares it and its payload is one JSON value
    /// (the host checks too; rpcd does not take a host's word for it).
    private func emitted(_ event: String, payload: ByteBuffer) {
        guard let descriptor = state.withLock({ $0.descriptor }), event.hasPrefix(descriptor.name + "."),
              descriptor.events.contains(where: { descriptor.name + "." + $0.name == event }),
              payload.withUnsafeReadableBytes({ JSONValidation.isSingleValue($0) }) else {
            logger.warning("Module host sent an event its service does not declare; dropped", metadata: [LogField.event: "\(LogValue.truncated(event))"])
            return
        }
        events.publish(event, payload: payload)
    }

    private func ping() {
        enum Action {
            case send(ModuleLinkOutbox, UInt64)
            case kill
            case none
        }
        let action = state.withLock { state -> Action in
            guard let host = state.host, let outbox = state.calls.link else { return .none }
            if NIODeadline.now() - host.lastPong > policy.pingTimeout.timeAmount { return .kill }
            state.pingSequence += 1
            return .send(outbox, state.pingSequence)
        }
        switch action {
        case .send(let outbox, let sequence): outbox.send(.ping(sequence))
        case .kill: kill(reason: "hung", detail: "it answered no ping for \(policy.pingTimeout)")
        case .none: break
        }
    }

    /// Kills the current host (SIGKILL); its death is handled as any other, with `reason` told to its callers.
    private func kill(reason: String, detail: String) {
        let host = state.withLock { state -> Host? in
            guard state.host != nil, state.host?.killReason == nil else { return nil }
            state.host?.killReason = reason
            return state.host
        }
        guard let host else { return }
        logger.error("Module host killed", metadata: [LogField.pid: "\(host.process.pid)", LogField.reason: "\(detail)"])
        host.process.kill()
        host.cgroup?.kill()
    }

    /// The link to host `attempt` closed: the host is about to end (`died` follows from its process). One that
    /// lingers without its link (stuck in a module's exit handler) gets `linkClosedGrace`, then SIGKILL.
    func linkClosed(attempt: UInt64) {
        // Not on the event loop: links close while rpcd's loops shut down, and the host must still be ended.
        ProcessWatcher.shared.after(policy.linkClosedGrace) {
            let process = self.state.withLock { state in state.host?.attempt == attempt ? state.host?.process : nil }
            process?.kill()
        }
    }

    /// Host `attempt` ended. One that was starting may have said why just before (a module that refused its
    /// configuration sends `startFailed`, then exits): its link is read to the end first, or for
    /// `linkClosedGrace` when a process it left behind holds the link open, so that its reason is not lost to
    /// "ended before its module was ready" when the exit is seen before the last read.
    private func hostEnded(attempt: UInt64, _ termination: ProcessTermination) {
        let starting = state.withLock { state -> (any Channel)? in
            guard case .starting = state.calls.phase, state.firstStart != nil, let host = state.host, host.attempt == attempt
            else { return nil }
            return host.channel
        }
        guard let starting, starting.isActive else { return died(attempt: attempt, termination) }
        let judge = RunsOnce { self.died(attempt: attempt, termination) }
        starting.closeFuture.whenComplete { _ in judge.run() }
        ProcessWatcher.shared.after(policy.linkClosedGrace) { judge.run() }
    }

    private func died(attempt: UInt64, _ termination: ProcessTermination) {
        enum Next {
            case restart(after: Duration)
            case gaveUp
            case stopped
            case none
        }
        let outcome = state.withLock { state -> (calls: [UInt64: Calls.Call], next: Next, killReason: String?, pid: pid_t, service: String?, cgroup: HostCgroup?)? in
            guard let host = state.host, host.attempt == attempt else { return nil }
            // Its link closes when the last process holding it ends (its process group and cgroup are killed);
            // until then nothing on it is heard (`received`).
            state.host = nil
            state.pinger?.cancel()
            state.pinger = nil
            let calls = state.calls.hostEnded()
            let next: Next
            switch state.calls.phase {
            case .retired:
                next = .stopped
            case .failed:
                next = .none
            case .starting where state.firstStart != nil:
                next = .none
            case .starting, .running, .waitingToRestart:
                let now = NIODeadline.now()
                state.starts = state.starts.filter { now - $0 < policy.startLimitInterval.timeAmount }
                state.deaths = state.deaths.filter { now - $0 < policy.startLimitInterval.timeAmount } + [now]
                if state.starts.count >= policy.startLimitBurst {
                    state.calls.failed(reason: "start limit hit")
                    next = .gaveUp
                } else {
                    state.calls.waitsToRestart()
                    next = .restart(after: policy.restartDelay(afterDeaths: state.deaths.count))
                }
            }
            return (calls, next, host.killReason, host.process.pid, state.descriptor?.name, host.cgroup)
        }
        guard let outcome else { return }
        for call in outcome.calls.values {
            call.timer?.cancel()
            releaseCharges(of: call)
        }
        if let cgroup = outcome.cgroup {
            cgroup.kill()
            removeWhenEmpty(cgroup)
        }
        let service = outcome.service ?? configuration.service ?? configuration.name
        let reason = outcome.killReason ?? "crashed"
        let error = RPCError.serviceUnavailable(service, handler: configuration.name, reason: reason, termination: "\(termination)")
        for call in outcome.calls.values where !call.callerAnswered { call.caller.responder.fail(error) }
        if case .stopped = outcome.next {
            logger.notice("Handler stopped", metadata: [LogField.pid: "\(outcome.pid)"])
            return
        }
        if outcome.killReason == nil { crashes.add(1, ordering: .relaxed) } else { hangs.add(1, ordering: .relaxed) }
        let metadata: Logger.Metadata = [
            LogField.service: "\(service)", LogField.pid: "\(outcome.pid)", LogField.termination: "\(termination)",
            LogField.reason: "\(reason)",
        ]
        switch outcome.next {
        case .restart(let delay):
            logger.error("Module host died; its calls in flight were answered -32005, restarting", metadata: metadata)
            loop.scheduleTask(in: delay.timeAmount) { self.launch() }
        case .gaveUp:
            // `error`, as a refused handler is: `critical` is for rpcd itself giving up (LOGGING.md).
            logger.error(
                "Module host died too often; the handler stays down until the next reload", metadata: metadata)
        case .none:
            let first = state.withLock { state -> EventLoopPromise<RPCServiceDescriptor>? in
                defer { state.firstStart = nil }
                if case .starting = state.calls.phase { state.calls.failed(reason: "\(reason): \(termination)") }
                return state.firstStart
            }
            first?.fail(ModuleHostStartError(reason: "the module host ended (\(termination)) before its module was ready"))
        case .stopped:
            break
        }
    }

    /// Removes a dead host's cgroup once the processes `cgroup.kill` ended have been reaped (by the kernel,
    /// moments later); gives up after a few seconds, logging it.
    private func removeWhenEmpty(_ cgroup: HostCgroup, tries: Int = 50) {
        guard !cgroup.remove() else { return }
        guard tries > 0 else {
            return logger.warning("Module host's cgroup still has processes; left in place", metadata: [LogField.cgroup: "\(cgroup.path)"])
        }
        ProcessWatcher.shared.after(.milliseconds(100)) { self.removeWhenEmpty(cgroup, tries: tries - 1) }
    }

    /// No new calls from now on; the host stops once its calls in flight are answered.
    func retire() {
        let drained = state.withLock { state -> Bool in
            // No more pings: a retiring host only finishes its calls, and at shutdown rpcd's loops stop soon.
            state.pinger?.cancel()
            state.pinger = nil
            return state.calls.retire()
        }
        if drained { stopHost() }
    }

    /// Closes the link: the host retires its module (de-initialised after its last call) and exits.
    private func stopHost() {
        let channel = state.withLock { $0.host?.channel }
        channel?.close(promise: nil)
    }

    /// Whether a host serves, or will again after its backoff (a reload keeps such a handler as it is).
    var isHealthy: Bool {
        state.withLock { state in
            switch state.calls.phase {
            case .starting, .running, .waitingToRestart: true
            case .failed, .retired: false
            }
        }
    }

    /// The supervisor's state, for `rpcd.info`.
    var status: JSONValue {
        let (phase, pid) = state.withLock { state -> (String, pid_t?) in
            let phase = switch state.calls.phase {
            case .starting: "starting"
            case .running: "running"
            case .waitingToRestart: "restarting"
            case .failed(let reason): "failed: \(reason)"
            case .retired: "stopping"
            }
            return (phase, state.host?.process.pid)
        }
        return [
            "isolation": "process", "state": .string(phase), "pid": pid.map { .number(Int($0)) } ?? .null,
            "crashes": .number(crashes.load(ordering: .relaxed)), "hangs": .number(hangs.load(ordering: .relaxed)),
            "restarts": .number(restarts.load(ordering: .relaxed)),
        ]
    }
}

/// Work done once, by whichever of its callers comes first.
private final class RunsOnce: Sendable {
    private let done = Atomic(false)
    private let work: @Sendable () -> Void

    init(_ work: @escaping @Sendable () -> Void) {
        self.work = work
    }

    func run() {
        if !done.exchange(true, ordering: .acquiringAndReleasing) { work() }
    }
}
