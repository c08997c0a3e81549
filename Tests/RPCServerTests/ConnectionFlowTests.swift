import NIOCore
@testable import RPCServer
import XCTest

/// `ConnectionFlow` alone, without a channel: the cases `ConnectionPipelineTests` drives through one (the
/// in-flight limit, a peer that does not read, turns, deliveries of answers, one flush per burst), told as events.
final class ConnectionFlowTests: XCTestCase {
    /// Readings of the clock, in nanoseconds.
    private let start: ConnectionFlow.Instant = 1_000_000
    private let turn: ConnectionFlow.Instant = 500_000

    private func flow(maxCallsInFlight: Int = 16) -> ConnectionFlow {
        ConnectionFlow(maxCallsInFlight: maxCallsInFlight, turn: .microseconds(500))
    }

    /// A frame read and run, answered at once, as nearly every call is.
    private func runAnsweredAtOnce(_ flow: inout ConnectionFlow, at now: ConnectionFlow.Instant) {
        XCTAssertEqual(flow.frameRead(now: now, writable: true), .run)
        let weight = flow.callsStarted(1)
        flow.dispatched(answeredAt: now)
        flow.callsAnswered(weight: weight)
    }

    func testAtTheInFlightLimitFramesWaitAndTheReadIsHeldUntilThereIsRoom() {
        var flow = flow(maxCallsInFlight: 2)
        for _ in 1...2 {
            XCTAssertEqual(flow.frameRead(now: start, writable: true), .run)
            XCTAssertEqual(flow.callsStarted(1), 1)
            flow.dispatched(answeredAt: nil)
        }
        XCTAssertEqual(flow.frameRead(now: start, writable: true), .wait, "at the limit")
        XCTAssertEqual(flow.frameQueued(now: start, writable: true), [], "no room: a turn would not help")
        XCTAssertFalse(flow.readRequested(writable: true, shutdown: .serving), "at the limit, the read is held")
        flow.readBurstEnded()
        XCTAssertFalse(flow.isQuiet)

        // Call 1 answered: the waiting frame takes its slot, and the read is still held.
        flow.callsAnswered(weight: 1)
        XCTAssertTrue(flow.drainWanted)
        XCTAssertTrue(flow.drainBegan(now: start))
        XCTAssertFalse(flow.drainBegan(now: start), "one drain at a time: answers call back into it")
        XCTAssertTrue(flow.nextWaitingFrame(now: start, writable: true, runsMessages: true))
        XCTAssertEqual(flow.callsStarted(1), 1)
        flow.dispatched(answeredAt: nil)
        XCTAssertFalse(flow.nextWaitingFrame(now: start, writable: true, runsMessages: true), "nothing more waits")
        XCTAssertEqual(flow.drainEnded(now: start, writable: true), [.flush])
        XCTAssertFalse(flow.heldReadResumes(writable: true, shutdown: .serving), "still at the limit")

        // Call 3 answered: room again, the held read goes on, once.
        flow.callsAnswered(weight: 1)
        XCTAssertTrue(flow.drainWanted, "a read is held")
        XCTAssertTrue(flow.drainBegan(now: start))
        XCTAssertFalse(flow.nextWaitingFrame(now: start, writable: true, runsMessages: true))
        XCTAssertEqual(flow.drainEnded(now: start, writable: true), [.flush])
        XCTAssertTrue(flow.heldReadResumes(writable: true, shutdown: .serving))
        XCTAssertFalse(flow.heldReadResumes(writable: true, shutdown: .serving))
        XCTAssertFalse(flow.drainWanted)

        flow.callsAnswered(weight: 1)
        XCTAssertTrue(flow.isQuiet)
        XCTAssertTrue(flow.readRequested(writable: true, shutdown: .serving))
    }

    func testABatchGetsTheRoomThereIsAndACancellationRunsAtTheLimit() {
        var flow = flow(maxCallsInFlight: 4)
        XCTAssertEqual(flow.callsStarted(3), 3)
        XCTAssertEqual(flow.callsStarted(5), 1, "a batch runs as many entries at a time as there is room for")
        XCTAssertEqual(flow.callsStarted(1), 0, "at the limit, a cancellation runs uncounted")
        XCTAssertEqual(flow.callsInFlight, 4)
        flow.callsAnswered(weight: 3)
        XCTAssertEqual(flow.callsInFlight, 1)
    }

    func testAPeerThatDoesNotReadIsNotServedOrReadUntilItDoes() {
        var flow = flow()
        XCTAssertEqual(flow.frameRead(now: start, writable: false), .wait)
        XCTAssertEqual(flow.frameQueued(now: start, writable: false), [])
        XCTAssertEqual(flow.frameRead(now: start, writable: true), .wait, "behind the frame that waits")
        XCTAssertEqual(flow.frameQueued(now: start, writable: false), [])
        XCTAssertFalse(flow.readRequested(writable: false, shutdown: .serving))
        flow.readBurstEnded()

        // Writable again: a drain on a turn of its own runs what waited, in order, then the held read.
        let later = start + 5_000_000
        XCTAssertTrue(flow.drainBegan(now: later))
        XCTAssertFalse(flow.nextWaitingFrame(now: later, writable: false, runsMessages: true), "not while it does not read")
        for _ in 1...2 {
            XCTAssertTrue(flow.nextWaitingFrame(now: later, writable: true, runsMessages: true))
            let weight = flow.callsStarted(1)
            flow.dispatched(answeredAt: later)
            flow.callsAnswered(weight: weight)
        }
        XCTAssertFalse(flow.nextWaitingFrame(now: later, writable: true, runsMessages: true))
        XCTAssertTrue(flow.holdsFlushes, "the drain's replies wait for its end")
        XCTAssertEqual(flow.drainEnded(now: later, writable: true), [.flush])
        XCTAssertFalse(flow.holdsFlushes)
        XCTAssertTrue(flow.heldReadResumes(writable: true, shutdown: .serving))
        XCTAssertTrue(flow.isQuiet)
    }

    func testFramesPastTheTurnWaitForTheNextRoundAskedForOnce() {
        var flow = flow()
        runAnsweredAtOnce(&flow, at: start)
        let pastTheTurn = start + turn
        runAnsweredAtOnce(&flow, at: start + 499_000)
        XCTAssertEqual(flow.latestReading, start + 499_000, "the call's reading is the turn's")
        XCTAssertEqual(flow.frameRead(now: pastTheTurn, writable: true), .run, "judged by the kept reading, not by now")
        XCTAssertEqual(flow.callsStarted(1), 1)
        flow.dispatched(answeredAt: nil)
        XCTAssertNil(flow.latestReading, "a call that answers later makes the reading stale")
        XCTAssertEqual(flow.frameRead(now: pastTheTurn, writable: true), .wait, "the turn is over")
        XCTAssertEqual(flow.frameQueued(now: pastTheTurn, writable: true), .scheduleTurn)
        XCTAssertEqual(flow.frameRead(now: pastTheTurn, writable: true), .wait)
        XCTAssertEqual(flow.frameQueued(now: pastTheTurn, writable: true), [], "asked for once")
        flow.readBurstEnded()
        XCTAssertNil(flow.latestReading)

        flow.turnGranted()
        let nextRound = pastTheTurn + 1_000_000
        XCTAssertTrue(flow.drainBegan(now: nextRound), "a turn of its own")
        XCTAssertEqual(flow.phase, .draining(turnStarted: nextRound, withinReadBurst: false))
        XCTAssertTrue(flow.nextWaitingFrame(now: nextRound, writable: true, runsMessages: true))
        _ = flow.callsStarted(1)
        flow.dispatched(answeredAt: nextRound + turn)
        flow.callsAnswered(weight: 1)
        XCTAssertFalse(flow.nextWaitingFrame(now: nextRound + turn, writable: true, runsMessages: true), "this turn is over too")
        XCTAssertEqual(flow.drainEnded(now: nextRound + turn, writable: true), [.scheduleTurn, .flush])
        XCTAssertEqual(flow.phase, .idle)
        XCTAssertEqual(flow.waitingFrames, 1)
    }

    func testTheRepliesOfABurstOrADrainWithinItAreFlushedOnceAtItsEnd() {
        var flow = flow(maxCallsInFlight: 1)
        XCTAssertFalse(flow.holdsFlushes, "between bursts, a reply goes out at once")
        XCTAssertEqual(flow.frameRead(now: start, writable: true), .run)
        XCTAssertEqual(flow.phase, .reading(turnStarted: start))
        XCTAssertTrue(flow.holdsFlushes)
        _ = flow.callsStarted(1)
        flow.dispatched(answeredAt: nil)
        XCTAssertEqual(flow.frameRead(now: start, writable: true), .wait)
        _ = flow.frameQueued(now: start, writable: true)

        // The call answers inside the burst: the drain it starts goes back to the burst, with no flush of its own.
        flow.callsAnswered(weight: 1)
        XCTAssertTrue(flow.drainBegan(now: start))
        XCTAssertEqual(flow.phase, .draining(turnStarted: start, withinReadBurst: true))
        XCTAssertTrue(flow.nextWaitingFrame(now: start, writable: true, runsMessages: true))
        _ = flow.callsStarted(1)
        flow.dispatched(answeredAt: start)
        flow.callsAnswered(weight: 1)
        XCTAssertEqual(flow.drainEnded(now: start, writable: true), [])
        XCTAssertEqual(flow.phase, .reading(turnStarted: start))
        XCTAssertTrue(flow.holdsFlushes)
        flow.readBurstEnded()
        XCTAssertEqual(flow.phase, .idle)
        XCTAssertFalse(flow.holdsFlushes)
    }

    func testADeliveryOfAnswersHoldsRepliesUntilItEndsWhateverThePhase() {
        var flow = flow()
        XCTAssertFalse(flow.holdsFlushes, "idle: a reply goes out at once")
        XCTAssertTrue(flow.answersArrived())
        XCTAssertTrue(flow.holdsFlushes)
        // An answer frees a slot, and waiting frames run on a turn of their own.
        XCTAssertTrue(flow.drainBegan(now: start))
        XCTAssertEqual(flow.drainEnded(now: start, writable: true), [], "a drain's end leaves the flush to the delivery")
        XCTAssertTrue(flow.holdsFlushes)
        XCTAssertTrue(flow.answersDelivered(), "idle: the delivery's end flushes")
        XCTAssertFalse(flow.holdsFlushes)

        XCTAssertEqual(flow.frameRead(now: start, writable: true), .run)
        XCTAssertTrue(flow.answersArrived())
        XCTAssertFalse(flow.answersDelivered(), "inside a burst, its end flushes")
        XCTAssertTrue(flow.holdsFlushes)
        flow.readBurstEnded()
        XCTAssertFalse(flow.holdsFlushes)
    }

    func testADeliveryInsideADeliveryLeavesTheFlushToTheOuterOne() {
        var flow = flow()
        XCTAssertTrue(flow.answersArrived())
        XCTAssertFalse(flow.answersArrived(), "one runs already: the handler does not end this one")
        XCTAssertTrue(flow.holdsFlushes)
        XCTAssertTrue(flow.answersDelivered())
        XCTAssertFalse(flow.holdsFlushes)
    }

    func testWhileStoppingOnlyThePeersReadingHoldsReadsBack() {
        var flow = flow(maxCallsInFlight: 1)
        _ = flow.callsStarted(1)
        XCTAssertFalse(flow.readsMore(writable: true, shutdown: .serving))
        XCTAssertTrue(flow.readsMore(writable: true, shutdown: .stopping), "what is read is refused, not run")
        XCTAssertFalse(flow.readsMore(writable: false, shutdown: .stopping))
        XCTAssertTrue(flow.readsMore(writable: false, shutdown: .closed))
        XCTAssertFalse(flow.readRequested(writable: true, shutdown: .serving))
        XCTAssertTrue(flow.heldReadResumes(writable: true, shutdown: .stopping), "the stop lets the held read go")

        XCTAssertEqual(flow.frameRead(now: start, writable: true), .wait)
        _ = flow.frameQueued(now: start, writable: true)
        flow.callsAnswered(weight: 1)
        XCTAssertTrue(flow.drainBegan(now: start))
        XCTAssertFalse(flow.nextWaitingFrame(now: start, writable: true, runsMessages: false), "nothing runs once stopping")
        flow.waitingFramesDropped()
        XCTAssertTrue(flow.isQuiet)
    }
}
