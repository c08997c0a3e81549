import JSONRPC
import Logging
import NIOCore
import RPCCore
import RPCLogging
import RPCProtocol
import Synchronization

/// Calls handed to modules and not answered by them yet, by token.
///
/// A module gets an integer token disguised as `rpcd_call *`, never a pointer to host memory, so a module
/// that answers twice, or answers after its call timed out, is detected and logged instead of touching
/// freed memory. Thread-safe: modules answer from any thread.
final class ModuleCallTable: Sendable {
    static let shared = ModuleCallTable()

    private let nextToken = Atomic<UInt>(1)
    private let calls = Mutex<[UInt: PendingModuleCall]>([:])

    /// Returns the token the module sees as its `rpcd_call *` (never 0, so never NULL).
    func register(_ call: PendingModuleCall) -> UInt {
        let token = nextToken.wrappingAdd(1, ordering: .relaxed).oldValue
        calls.withLock { $0[token] = call }
        return token
    }

    /// A module's answer: completes the call unless it already timed out; always releases the module's slot.
    func complete(_ handle: OpaquePointer?, _ outcome: RPCOutcome?, invalidResult: Bool = false) {
        let token = UInt(bitPattern: handle.map { Int(bitPattern: $0) } ?? 0)
        guard let call = calls.withLock({ $0.removeValue(forKey: token) }) else {
            Logger(label: "rpcd").warning(
                "A module answered a call that was already answered; answer ignored", metadata: [LogField.callToken: "\(token)"])
            return
        }
        call.moduleAnswered(invalidResult ? nil : outcome)
    }
}

/// One call inside a module: answered to the client at most once (by the module or by the timeout), and
/// counted against the handler until the module itself answers.
final class PendingModuleCall: Sendable {
    private let responder: RPCResponder
    private let service: ModuleService
    private let method: String
    private let answered = Atomic<Bool>(false)
    private let timeout = Mutex<Scheduled<Void>?>(nil)

    init(responder: RPCResponder, service: ModuleService, method: String) {
        self.responder = responder
        self.service = service
        self.method = method
    }

    func armTimeout(on loop: any EventLoop, after duration: Duration) {
        let milliseconds = Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        let task = loop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
            guard self.claimAnswer() else { return }
            self.service.logger.warning("Call timed out", metadata: [LogField.method: "\(self.method)"])
            self.responder.fail(RPCError.timeout(after: milliseconds))
        }
        timeout.withLock { $0 = task }
    }

    /// nil: the module sent a result that is not valid JSON.
    fileprivate func moduleAnswered(_ outcome: RPCOutcome?) {
        timeout.withLock { $0?.cancel() }
        defer { service.moduleCallFinished() }
        guard claimAnswer() else {
            service.logger.debug("Late answer after timeout dropped", metadata: [LogField.method: "\(method)"])
            return
        }
        switch outcome {
        case .success(let result): responder.succeed(rawJSON: result)
        case .failure(let error): responder.fail(error)
        case nil:
            service.logger.error("Module answered with invalid JSON", metadata: [LogField.method: "\(method)"])
            responder.fail(RPCError.internalError)
        }
    }

    private func claimAnswer() -> Bool {
        answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}
