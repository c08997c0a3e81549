import NIOCore
import NIOEmbedded
@testable import RPCModules
import XCTest

/// `LinkedCalls` alone, without a host process or a link: which calls a supervisor admits, when a call's slot
/// is free, what a cancellation, a timeout, a reply gathered across reads and a host's end ask for, told as
/// events. Callers are names, links are names.
final class LinkedCallsTests: XCTestCase {
    private typealias Calls = LinkedCalls<String, String>

    private func running(maxConcurrency: Int = 4, link: String = "link 1") -> Calls {
        var calls = Calls(maxConcurrency: maxConcurrency)
        XCTAssertTrue(calls.hostStarting())
        calls.hostReady(on: link)
        return calls
    }

    /// Admits a call from `caller`, returning its token; fails the test if it is not sent on `link`.
    private func sent(_ calls: inout Calls, _ caller: String, linkCharge: Int = 10, on link: String = "link 1",
                      file: StaticString = #filePath, line: UInt = #line) -> UInt64 {
        guard case .send(let token, let sentOn) = calls.admit(caller, linkCharge: linkCharge) else {
            XCTFail("\(caller) was not sent", file: file, line: line)
            return 0
        }
        XCTAssertEqual(sentOn, link, file: file, line: line)
        return token
    }

    private func isBusy(_ admission: Calls.Admission) -> Bool {
        if case .busy = admission { return true }
        return false
    }

    private func unavailableReason(_ admission: Calls.Admission) -> String? {
        if case .unavailable(let reason) = admission { return reason }
        return nil
    }

    func testOnlyARunningHostTakesCallsAndEachPhaseSaysWhyNot() {
        var calls = Calls(maxConcurrency: 4)
        XCTAssertEqual(unavailableReason(calls.admit("a", linkCharge: 1)), "restarting", "starting")
        XCTAssertNil(calls.link)
        XCTAssertTrue(calls.hostStarting())
        XCTAssertTrue(calls.isEmpty)
        calls.hostReady(on: "link 1")
        XCTAssertEqual(calls.link, "link 1")
        XCTAssertFalse(calls.hostStarting(), "a running host is not started again")
        _ = sent(&calls, "a")

        calls.waitsToRestart()
        XCTAssertEqual(unavailableReason(calls.admit("b", linkCharge: 1)), "restarting")
        XCTAssertTrue(calls.hostStarting(), "after the backoff")
        XCTAssertEqual(unavailableReason(calls.admit("b", linkCharge: 1)), "restarting")

        calls.failed(reason: "start limit hit")
        XCTAssertEqual(unavailableReason(calls.admit("b", linkCharge: 1)), "start limit hit")
        XCTAssertFalse(calls.hostStarting(), "a failed handler stays down until the next reload")

        _ = calls.retire()
        XCTAssertEqual(unavailableReason(calls.admit("b", linkCharge: 1)), "stopped")
        XCTAssertFalse(calls.hostStarting())
    }

    func testMaxConcurrencyCallsAtOnceAndAnAnswerFreesASlot() {
        var calls = running(maxConcurrency: 2)
        let first = sent(&calls, "a")
        let second = sent(&calls, "b")
        XCTAssertNotEqual(first, second)
        XCTAssertEqual(calls.slotsTaken, 2)
        XCTAssertTrue(isBusy(calls.admit("c", linkCharge: 1)))

        guard let finished = calls.answered(first) else { return XCTFail("call a is not on the books") }
        XCTAssertEqual(finished.call.caller, "a")
        XCTAssertEqual(finished.call.charged, 10)
        XCTAssertFalse(finished.call.callerAnswered, "its caller waits: the supervisor answers it")
        XCTAssertFalse(finished.drained)
        XCTAssertNil(calls.answered(first), "answered once")
        XCTAssertEqual(calls.slotsTaken, 1)
        let third = sent(&calls, "c")
        XCTAssertGreaterThan(third, second, "tokens are never reused")
    }

    func testACancelledCallFreesItsSlotAtOnceAndItsLateAnswerIsDropped() throws {
        let loop = EmbeddedEventLoop()
        var calls = running(maxConcurrency: 1)
        let token = sent(&calls, "a")
        let timer = loop.scheduleTask(in: .seconds(5)) {}
        XCTAssertTrue(calls.timerStarted(timer, for: token))

        let abandonment = try XCTUnwrap(calls.callerCancelled(token))
        XCTAssertNotNil(abandonment.timer, "its timer is cancelled")
        XCTAssertEqual(abandonment.cancelOn, "link 1", "the host is told")
        XCTAssertNil(calls.callerCancelled(token), "cancelled once")
        XCTAssertNil(calls.timedOut(token), "a cancelled call does not time out")
        XCTAssertEqual(calls.slotsTaken, 0)
        let next = sent(&calls, "b")

        let late = try XCTUnwrap(calls.answered(token), "still on the books until the host answers")
        XCTAssertTrue(late.call.callerAnswered, "dropped: its caller has its answer")
        XCTAssertNil(late.call.timer)
        XCTAssertEqual(calls.slotsTaken, 1, "its slot was given back once, not twice")
        XCTAssertTrue(isBusy(calls.admit("c", linkCharge: 1)))
        XCTAssertNotNil(calls.answered(next))
        XCTAssertTrue(calls.isEmpty)
    }

    func testATimedOutCallKeepsItsSlotUntilTheHostAnswers() throws {
        var calls = running(maxConcurrency: 1)
        let token = sent(&calls, "a")
        let timedOut = try XCTUnwrap(calls.timedOut(token))
        XCTAssertEqual(timedOut.caller, "a", "answered -32003 by the supervisor")
        XCTAssertEqual(timedOut.cancelOn, "link 1", "the host is told")
        XCTAssertNil(calls.timedOut(token))
        XCTAssertNil(calls.callerCancelled(token), "its caller has its answer already")
        XCTAssertTrue(isBusy(calls.admit("b", linkCharge: 1)), "the host still works on it")

        let late = try XCTUnwrap(calls.answered(token))
        XCTAssertTrue(late.call.callerAnswered)
        XCTAssertEqual(calls.slotsTaken, 0)
    }

    func testATimerStartedAfterTheAnswerIsToBeCancelled() {
        let loop = EmbeddedEventLoop()
        var calls = running()
        let token = sent(&calls, "a")
        XCTAssertNotNil(calls.answered(token))
        XCTAssertFalse(calls.timerStarted(loop.scheduleTask(in: .seconds(5)) {}, for: token))
    }

    func testWithoutARunningHostACancellationFreesTheSlotAndTellsNoHost() throws {
        var calls = running()
        let token = sent(&calls, "a")
        _ = calls.retire()
        let abandonment = try XCTUnwrap(calls.callerCancelled(token))
        XCTAssertNil(abandonment.cancelOn)
        XCTAssertEqual(calls.slotsTaken, 0)
    }

    func testAReplyGatheredAcrossReadsIsChargedAsItArrives() throws {
        var calls = running()
        let token = sent(&calls, "a", linkCharge: 10)
        var asked: [String] = []
        guard case .hold = calls.replyArriving(token, length: 100, charge: { asked.append($0); return .charged }) else {
            return XCTFail("not held")
        }
        XCTAssertEqual(asked, ["a"])
        let finished = try XCTUnwrap(calls.answered(token))
        XCTAssertEqual(finished.call.replyCharge, 100)
        XCTAssertEqual(finished.call.charged, 110, "the link's copy and the reply are given back")
    }

    func testAReplyTheShareCannotCoverIsRefusedAndOneNobodyWaitsForIsSkipped() throws {
        var calls = running(maxConcurrency: 3)
        let overShare = sent(&calls, "a")
        let left = sent(&calls, "b")
        let timedOut = sent(&calls, "c")

        guard case .refuse(let refused) = calls.replyArriving(overShare, length: 100, charge: { _ in .overShare }) else {
            return XCTFail("not refused")
        }
        XCTAssertEqual(refused.call.caller, "a", "answered -32009 by the supervisor")
        XCTAssertEqual(refused.call.charged, 10, "nothing charged for the reply")

        guard case .skip(let gone?) = calls.replyArriving(left, length: 100, charge: { _ in .callerLeft }) else {
            return XCTFail("not skipped")
        }
        XCTAssertEqual(gone.call.caller, "b")

        XCTAssertNotNil(calls.timedOut(timedOut))
        guard case .skip(let unwanted?) = calls.replyArriving(timedOut, length: 100, charge: { _ in
            XCTFail("the peer of a caller answered already is not charged")
            return .charged
        }) else { return XCTFail("not skipped") }
        XCTAssertTrue(unwanted.call.callerAnswered)

        XCTAssertTrue(calls.isEmpty, "each is off the books as its reply is skipped")
        XCTAssertEqual(calls.slotsTaken, 0)
        guard case .skip(nil) = calls.replyArriving(overShare, length: 100, charge: { _ in .charged }) else {
            return XCTFail("a reply to no call is not skipped")
        }
    }

    func testAHostThatEndsHandsBackEveryCall() throws {
        var calls = running(maxConcurrency: 3)
        let waiting = sent(&calls, "a")
        let cancelled = sent(&calls, "b")
        XCTAssertNotNil(calls.callerCancelled(cancelled))

        let ended = calls.hostEnded()
        XCTAssertEqual(Set(ended.keys), [waiting, cancelled])
        XCTAssertEqual(ended[waiting]?.callerAnswered, false, "answered -32005 by the supervisor")
        XCTAssertEqual(ended[cancelled]?.callerAnswered, true)
        XCTAssertTrue(calls.isEmpty)
        XCTAssertEqual(calls.slotsTaken, 0)
        XCTAssertNil(calls.answered(waiting), "a late answer finds no call")

        calls.waitsToRestart()
        XCTAssertTrue(calls.hostStarting())
        calls.hostReady(on: "link 2")
        let next = sent(&calls, "c", on: "link 2")
        XCTAssertGreaterThan(next, cancelled, "the next host's calls have tokens of their own")
    }

    func testARetiredHostIsStoppedOnceItsLastCallIsOffTheBooks() throws {
        var idle = running()
        XCTAssertTrue(idle.retire(), "no call: stopped at once")

        var calls = running()
        let first = sent(&calls, "a")
        let second = sent(&calls, "b")
        XCTAssertFalse(calls.retire(), "calls in flight are answered first")
        XCTAssertEqual(unavailableReason(calls.admit("c", linkCharge: 1)), "stopped")
        XCTAssertNil(calls.link)
        XCTAssertEqual(calls.answered(first)?.drained, false)
        guard case .skip(let last?) = calls.replyArriving(second, length: 5, charge: { _ in .callerLeft }) else {
            return XCTFail("not skipped")
        }
        XCTAssertTrue(last.drained, "the last call's end stops the host")
    }
}
