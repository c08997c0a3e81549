import NIOCore
import RPCCore
import XCTest

/// `PendingCallState` alone, without a router or a channel: which of a call's events end it, and what each
/// later event is told to do.
final class PendingCallStateTests: XCTestCase {
    private var replies: [ByteBuffer?] = []

    private func running() -> PendingCallState {
        PendingCallState { [self] reply in replies.append(reply) }
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
        completion(ByteBuffer(string: "r"))
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
        for handler in cancellation.handlers { handler() }
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
        XCTAssertEqual(state.cancel()?.handlers.count, 0)
    }
}
