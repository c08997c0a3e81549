import JSONRPC
import NIOCore
import RPCCore
import XCTest

/// `PendingCallState` alone, without a router or a channel: which of a call's events end it, and what each
/// later event is told to do.
final class PendingCallStateTests: XCTestCase {
    private var replies: [ByteBuffer?] = []

    private func running() -> PendingCallState {
        PendingCallState { [self] reply in replies.append(reply?.serialized) }
    }

    func testARunningCallIsRegisteredOnce() {
        var state = running()
        XCTAssertTrue(state.register())
        XCTAssertFalse(state.register())
    }

    func testTheFirstAnswerIsPassedOnAndASecondIsADuplicate() {
        var state = running()
        XCTAssertTrue(state.register())
        guard case .reply(let completion, let registered) = state.answer() else { return XCTFail("not passed on") }
        XCTAssertTrue(registered)
        completion(.serialized(ByteBuffer(string: "r")))
        XCTAssertEqual(replies, [ByteBuffer(string: "r")])
        guard case .duplicate = state.answer() else { return XCTFail("a second answer is not a duplicate") }
        XCTAssertFalse(state.register(), "an answered call is not put in the in-flight table")
        XCTAssertNil(state.cancel(), "an answered call cannot be cancelled")
    }

    func testACallAnsweredBeforeItWasRegisteredIsNotTakenOutOfTheTable() {
        var state = running()
        guard case .reply(_, let registered) = state.answer() else { return XCTFail("not passed on") }
        XCTAssertFalse(registered)
    }

    func testACancellationRunsTheHandlersOnceAndDropsTheLaterAnswer() {
        var state = running()
        var ran: [String] = []
        XCTAssertNil(state.onCancel { ran.append("first") })
        XCTAssertNil(state.onCancel { ran.append("second") })
        XCTAssertTrue(state.register())
        guard let cancellation = state.cancel() else { return XCTFail("a running call was not cancelled") }
        XCTAssertTrue(cancellation.registered)
        cancellation.handlers.run()
        XCTAssertEqual(ran, ["first", "second"])
        XCTAssertNil(state.cancel(), "cancelled twice")
        guard case .dropAfterCancellation = state.answer() else {
            return XCTFail("the service's answer is not dropped")
        }
        XCTAssertFalse(state.register())
    }

    func testAHandlerRegisteredAfterTheCancellationRunsAtOnceAndAfterTheAnswerNever() {
        var cancelled = running()
        _ = cancelled.cancel()
        var ran = false
        cancelled.onCancel { ran = true }?()
        XCTAssertTrue(ran)

        var answered = running()
        _ = answered.answer()
        XCTAssertNil(answered.onCancel { XCTFail("ran after the answer") })
    }

    func testACancellationWithoutHandlersHasNoneToRun() {
        var state = running()
        guard case .nothing = state.cancel()?.handlers else { return XCTFail("handlers to run") }
    }

    /// A service that knows its calls by token is told the token, once, under the rules closures follow; a
    /// closure registered beside it runs after it.
    func testATargetIsToldItsTokenUnderTheSameRules() {
        let target = RecordingTarget()
        var state = running()
        XCTAssertFalse(state.onCancel(tell: target, token: 7))
        guard case .target(_, token: 7) = state.cancel()?.handlers else { return XCTFail("not kept as a target") }

        var both = running()
        XCTAssertFalse(both.onCancel(tell: target, token: 8))
        XCTAssertNil(both.onCancel { target.callCancelled(token: 9) })
        both.cancel()?.handlers.run()
        XCTAssertEqual(target.tokens, [8, 9], "the target first, then the closure")
        XCTAssertNil(both.cancel(), "cancelled once")

        var cancelled = running()
        _ = cancelled.cancel()
        XCTAssertTrue(cancelled.onCancel(tell: target, token: 10), "told at once")
        var answered = running()
        _ = answered.answer()
        XCTAssertFalse(answered.onCancel(tell: target, token: 11), "never after the answer")
    }
}

private final class RecordingTarget: RPCCancellationTarget, @unchecked Sendable {
    var tokens: [UInt64] = []
    func callCancelled(token: UInt64) { tokens.append(token) }
}
