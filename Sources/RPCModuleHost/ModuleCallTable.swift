package import Logging
import NIOCore
import RPCLogging
import RPCProtocol
import Synchronization

/// What a module answered: its result (checked to be one JSON value) or its error.
typealias ModuleOutcome = Result<ByteBuffer, RPCError>

/// Calls handed to modules and not answered by them yet, by unguessable token (`OpaqueHandleTable`).
///
/// A module that answers twice, answers after its call timed out, or answers with a token it never got is
/// detected and logged (at a limited rate: a broken module must not flood the journal) instead of touching
/// freed memory or another module's call. Thread-safe: modules answer from any thread.
final class ModuleCallTable: Sendable {
    static let shared = ModuleCallTable()

    private let calls = OpaqueHandleTable<PendingModuleCall>()
    private let strayAnswers = LogRateLimiter(burst: 10, per: .seconds(1))

    /// Returns the token the module sees as its `rpcd_call *`.
    func register(_ call: PendingModuleCall) -> UInt {
        calls.insert(call)
    }

    /// `register` for a call its caller knows by `key` (`ModuleInstance.enter(_:answer:key:)`); nil when a call
    /// with that key is open already.
    func register(_ call: PendingModuleCall, key: UInt64) -> UInt? {
        calls.insert(call, key: key)
    }

    /// The open call registered with `key`, and its token; nil when none is (answered already, or never given).
    func call(forKey key: UInt64) -> (call: PendingModuleCall, token: UInt)? {
        let token = calls.token(forKey: key)
        return calls.value(for: token).map { ($0, token) }
    }

    /// A module's answer: completes the call unless it already timed out; always releases the module's slot.
    func complete(_ handle: OpaquePointer?, _ outcome: ModuleOutcome?, invalidResult: Bool = false) {
        guard let call = calls.remove(UInt(handle: handle)) else {
            if let suppressed = strayAnswers.admit() {
                var metadata: Logger.Metadata = [LogField.callToken: "\(UInt(handle: handle))"]
                if suppressed > 0 { metadata[LogField.suppressed] = "\(suppressed)" }
                ModuleLog.logger.warning(
                    "A module answered a call that is not open (answered already, or never given); answer ignored",
                    metadata: metadata)
            }
            return
        }
        call.moduleAnswered(invalidResult ? nil : outcome)
    }

    /// Whether the call `token` is handed to its module and not answered by it yet.
    func isOpen(_ token: UInt) -> Bool {
        calls.value(for: token) != nil
    }

    /// `rpcd_host.call_cancelled`: whether the caller of an open call gave up on it. False for a handle that
    /// names no open call (answered already, or never given).
    func isCancelled(_ handle: OpaquePointer?) -> Bool {
        calls.value(for: UInt(handle: handle))?.isCancelled ?? false
    }

    /// `rpcd_host.param`: the text of bound parameter `index` of an open call; nil when it is absent, the call's
    /// method does not bind its params, or the handle names no open call.
    func boundParam(_ handle: OpaquePointer?, index: Int) -> UnsafeBufferPointer<CChar>? {
        calls.value(for: UInt(handle: handle))?.boundParams?.element(index)
    }

    /// Calls handed to modules and not answered yet (for tests).
    var openCalls: Int { calls.count }
}

/// One call inside a module: answered to the client at most once (by the module, the timeout or a
/// cancellation), counted against `MaxConcurrency=` until the module answers or the call is cancelled, and
/// against the instance's life until the module answers.
final class PendingModuleCall: Sendable {
    private let answer: any ModuleCallAnswer
    private let instance: ModuleInstance
    private let method: String
    /// The params as bound by rpcd (`RPCD_METHOD_BIND_PARAMS`): held until the call ends, as `rpcd_host.param`
    /// promises.
    let boundParams: BoundCallParams?
    private let answered = Atomic<Bool>(false)
    private let cancelled = Atomic<Bool>(false)
    private let timedOut = Atomic<Bool>(false)
    private let holdsSlot = Atomic<Bool>(true)
    private let timeout = Mutex<Scheduled<Void>?>(nil)

    init(answer: any ModuleCallAnswer, instance: ModuleInstance, method: String, boundParams: BoundCallParams?) {
        self.answer = answer
        self.instance = instance
        self.method = method
        self.boundParams = boundParams
    }

    /// `Timeout=`: unless the module has answered by then, the caller gets -32003 and the module is told as
    /// for a cancellation (`call_cancelled` turns 1, and `tellModule` calls its `cancel`), since nobody waits
    /// for its answer any more. The call keeps its `MaxConcurrency=` slot until the module answers: unlike a
    /// cancelled call's, its work was never abandoned by the client, and may still be running.
    func armTimeout(on loop: any EventLoop, after duration: Duration, tellModule: @escaping @Sendable () -> Void) {
        let milliseconds = Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        let task = loop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
            guard self.claimAnswer() else { return }
            self.timedOut.store(true, ordering: .releasing)
            self.instance.logger.warning("Call timed out", metadata: [LogField.method: "\(self.method)"])
            tellModule()
            self.answer.fail(RPCError.timeout(after: milliseconds))
        }
        timeout.withLock { $0 = task }
    }

    /// Whether nobody waits for the module's answer any more: the caller gave up, or `Timeout=` passed.
    var isCancelled: Bool { cancelled.load(ordering: .acquiring) || timedOut.load(ordering: .acquiring) }

    /// The caller gave up (rpcd has answered it -32011): frees the call's slot and marks it for
    /// `call_cancelled`. Returns false when the module had answered already (nothing left to tell it).
    func cancel() -> Bool {
        timeout.withLock { $0?.cancel() }
        cancelled.store(true, ordering: .releasing)
        if releaseSlot() { instance.releaseSlot() }
        return claimAnswer()
    }

    /// nil: the module sent a result that is not valid JSON.
    fileprivate func moduleAnswered(_ outcome: ModuleOutcome?) {
        timeout.withLock { $0?.cancel() }
        defer { instance.moduleCallFinished(releasingSlot: releaseSlot()) }
        guard claimAnswer() else {
            instance.logger.debug(
                cancelled.load(ordering: .acquiring) ? "Answer to a cancelled call dropped" : "Late answer after timeout dropped",
                metadata: [LogField.method: "\(method)"])
            return answer.moduleFinishedAbandonedCall()
        }
        switch outcome {
        case .success(let result): answer.succeed(rawJSON: result)
        case .failure(let error): answer.fail(error)
        case nil:
            instance.logger.error("Module answered with invalid JSON", metadata: [LogField.method: "\(method)"])
            answer.fail(RPCError.internalError)
        }
    }

    /// True exactly once: for whoever gives the call's `MaxConcurrency=` slot back.
    private func releaseSlot() -> Bool {
        holdsSlot.exchange(false, ordering: .acquiringAndReleasing)
    }

    private func claimAnswer() -> Bool {
        answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}

/// Where module calls log what no handler owns (an answer to a call that is not open, a stale handler
/// handle): in rpcd the daemon's logger, set when the `HandlerSet` is made; in a module host process the
/// link's, set when it starts.
package enum ModuleLog {
    private static let current = Mutex(Logger(label: "rpcd"))

    package static var logger: Logger {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}
