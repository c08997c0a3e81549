package import JSONRPC
import Logging
package import NIOCore
import RPCLogging
import RPCProtocol

/// One call between routing and reply, for a call that may answer later: it times the call, keeps it in the
/// connection's in-flight table while it can be cancelled, and passes on its reply, all as its state
/// (`PendingCallState`) says. Confined to the connection's event loop: completions from other threads hop
/// there first, so the first-completion-wins check needs no lock. A cancelled call (`rpc.cancel`, or its
/// connection ended) is answered -32011 at once, which ends it for the connection's in-flight count; its
/// service learns of it through the handlers it registered (`RPCCall.onCancel`), and its own answer, when it
/// comes, is dropped like any second completion.
final class PendingCall: RPCCompletionSink, @unchecked Sendable {
    private let eventLoop: any EventLoop
    private let ending: RPCCallEnding
    private let started = NIODeadline.now()
    private var state: PendingCallState

    init(eventLoop: any EventLoop, ending: RPCCallEnding, completion: @escaping (RPCReply?) -> Void) {
        self.eventLoop = eventLoop
        self.ending = ending
        self.state = PendingCallState(completion: completion)
    }

    private var connection: RPCConnectionInfo { ending.connection }
    /// The call's request, kept once, by its ending (a copy costs a retain and a release per reference in it).
    private var request: RPCRequest { ending.request }

    func complete(_ outcome: RPCOutcome, _ cause: (any Error)?) {
        if eventLoop.inEventLoop {
            finish(outcome, cause)
        } else {
            eventLoop.execute { self.finish(outcome, cause) }
        }
    }

    /// Puts a call with an id that `handle` left unanswered into the connection's in-flight table, where
    /// `rpc.cancel` and the end of the connection find it. On the connection's event loop.
    func registerIfOpen() {
        guard let id = request.id, update({ $0.register() }) else { return }
        connection.inFlight.add(id, self)
    }

    /// See `RPCCall.onCancel(_:)`. On the connection's event loop.
    func onCancel(_ handler: @escaping () -> Void) {
        if let runNow = update({ $0.onCancel(handler) }) { runNow() }
    }

    /// See `RPCCall.onCancel(tell:token:)`. On the connection's event loop.
    func onCancel(tell target: any RPCCancellationTarget, token: UInt64) {
        if update({ $0.onCancel(tell: target, token: token) }) { target.callCancelled(token: token) }
    }

    /// Answers the call -32011 unless it was answered already, then tells the service. On the connection's
    /// event loop.
    func cancel() {
        guard let cancellation = update({ $0.cancel() }) else { return }
        ending.cancelled(after: NIODeadline.now() - started)
        ended(registered: cancellation.registered)
        // Not a failure of the service: not logged beyond `cancelled`'s debug line, not counted as an error.
        cancellation.completion(request.id.map { RPCReply.error(.callCancelled, id: $0) })
        cancellation.handlers.run()
    }

    private func finish(_ outcome: RPCOutcome, _ cause: (any Error)?) {
        switch update({ $0.answer() }) {
        case .reply(let completion, let registered):
            ended(registered: registered)
            // Unserialized: the connection writes it straight into its output buffer.
            completion(ending.reply(outcome, cause: cause, after: NIODeadline.now() - started))
        case .dropAfterCancellation:
            return
        case .duplicate:
            connection.logger.warning(
                "Call completed more than once; extra completion ignored",
                metadata: [LogField.method: "\(request.method)"])
        }
    }

    /// Gives `event` the call's state out of place: taken out, changed, put back. A `mutating` call on `state`
    /// would be an access spanning a call, which makes Swift check exclusivity at run time on every access to
    /// it; read and assigned only, its accesses provably never overlap and the optimizer drops the checks (as
    /// `WaitingFrames` in `RPCConnectionHandler.swift` does, bench/README.md).
    private func update<Result>(_ event: (inout PendingCallState) -> Result) -> Result {
        var current = state
        state = PendingCallState.taken
        defer { state = current }
        return event(&current)
    }

    /// The call no longer runs: its method's count of calls running, and the in-flight table, let it go.
    private func ended(registered: Bool) {
        ending.metrics?.ended()
        if registered, let id = request.id { connection.inFlight.remove(id, self) }
    }
}

/// Where a call that may answer later stands: running, answered by its service, or cancelled. A value that
/// takes the call's events (`register`, `onCancel`, `cancel`, `answer`) and says what to do about each;
/// `PendingCall` does it. The rules: the first of an answer and a cancellation ends the call; an answer
/// after a cancellation is expected and dropped, a second answer is the service's mistake; a cancellation
/// handler runs once, at once if the call is cancelled already, never once the call is answered. Never fails:
/// an event that comes too late is told so. Used on the connection's event loop, like its `PendingCall`.
package struct PendingCallState {
    private enum Phase {
        /// `completion` waits for the reply; `cancelHandlers` is what the service asked to run on
        /// cancellation; `registered`: in the connection's in-flight table.
        case running(completion: (RPCReply?) -> Void, cancelHandlers: CancelHandlers, registered: Bool)
        case answered
        case cancelled
    }

    /// What a service asked to be told when its call is cancelled.
    package enum CancelHandlers {
        /// Nothing: most calls, which answer before anyone could cancel them. No allocation.
        case nothing
        /// A service that knows the call by its own token (`RPCCancellationTarget`): no allocation either.
        case target(any RPCCancellationTarget, token: UInt64)
        /// Closures, in the order they were registered.
        case closures([() -> Void])

        /// Tells them, in order.
        package func run() {
            switch self {
            case .nothing: break
            case .target(let target, let token): target.callCancelled(token: token)
            case .closures(let handlers): for handler in handlers { handler() }
            }
        }

        /// These and then `handler`.
        fileprivate func adding(_ handler: @escaping () -> Void) -> CancelHandlers {
            switch self {
            case .nothing: .closures([handler])
            case .target(let target, let token): .closures([{ target.callCancelled(token: token) }, handler])
            case .closures(let handlers): .closures(handlers + [handler])
            }
        }
    }

    /// What to do with an answer from the service.
    package enum Answer {
        /// The first: pass the reply to `completion`, and take the call out of the in-flight table if `registered`.
        case reply(completion: (RPCReply?) -> Void, registered: Bool)
        /// The call was cancelled and answered -32011 already: drop it.
        case dropAfterCancellation
        /// The call was answered already: drop it, and say so.
        case duplicate
    }

    /// What to do for a cancellation: answer -32011 through `completion`, take the call out of the in-flight
    /// table if `registered`, then run `handlers`.
    package struct Cancellation {
        package let completion: (RPCReply?) -> Void
        package let registered: Bool
        package let handlers: CancelHandlers
    }

    private var phase: Phase

    /// What a `PendingCall` holds while its state is taken out to be changed.
    static var taken: PendingCallState { PendingCallState(phase: .answered) }

    private init(phase: Phase) {
        self.phase = phase
    }

    package init(completion: @escaping (RPCReply?) -> Void) {
        phase = .running(completion: completion, cancelHandlers: .nothing, registered: false)
    }

    /// The service returned from `handle` with the call unanswered: true once, when the call is to be put in
    /// the in-flight table (still running, not there yet).
    package mutating func register() -> Bool {
        guard case .running(let completion, let handlers, registered: false) = phase else { return false }
        phase = .running(completion: completion, cancelHandlers: handlers, registered: true)
        return true
    }

    /// The service asks for `handler` on cancellation: returned to be run now if the call is cancelled
    /// already; kept while it runs; dropped (nil) once it was answered.
    package mutating func onCancel(_ handler: @escaping () -> Void) -> (() -> Void)? {
        switch phase {
        case .cancelled:
            return handler
        case .answered:
            return nil
        case .running(let completion, let handlers, let registered):
            phase = .running(completion: completion, cancelHandlers: handlers.adding(handler), registered: registered)
            return nil
        }
    }

    /// The service asks for `target` to be told `token` on cancellation: true when it is to be told now (the
    /// call is cancelled already); kept while the call runs; dropped once it was answered. A service's first
    /// such request is kept as it is, with no allocation; a later handler joins it in a list.
    package mutating func onCancel(tell target: any RPCCancellationTarget, token: UInt64) -> Bool {
        switch phase {
        case .cancelled:
            return true
        case .answered:
            return false
        case .running(let completion, .nothing, let registered):
            let tell = CancelHandlers.target(target, token: token)
            phase = .running(completion: completion, cancelHandlers: tell, registered: registered)
            return false
        case .running(let completion, let handlers, let registered):
            let tell = handlers.adding { target.callCancelled(token: token) }
            phase = .running(completion: completion, cancelHandlers: tell, registered: registered)
            return false
        }
    }

    /// The caller gave up on the call: what to do, or nil when it has ended already.
    package mutating func cancel() -> Cancellation? {
        guard case .running(let completion, let handlers, let registered) = phase else { return nil }
        phase = .cancelled
        return Cancellation(completion: completion, registered: registered, handlers: handlers)
    }

    /// The service answered the call.
    package mutating func answer() -> Answer {
        switch phase {
        case .running(let completion, _, let registered):
            phase = .answered
            return .reply(completion: completion, registered: registered)
        case .cancelled:
            return .dropAfterCancellation
        case .answered:
            return .duplicate
        }
    }
}
