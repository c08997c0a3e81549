import Dispatch
import NIOPosix
import RPCModuleHost
import Synchronization
import XCTest

/// The watchdog's view of the worker pool is progress, not queue length (issue 14: a flood of blocking calls
/// must not get the daemon killed by its own watchdog).
final class WorkerPoolTests: XCTestCase {
    private var pool: WorkerPool!

    override func setUp() {
        pool = WorkerPool(threads: 1)
    }

    override func tearDownWithError() throws {
        try pool.syncShutdownGracefully()
    }

    func testAnIdlePoolAnswersAtOnce() {
        let answered = expectation(description: "answered")
        pool.whenProgressing { answered.fulfill() }
        wait(for: [answered], timeout: 5)
    }

    /// 50 queued jobs of 20 ms: the probe is answered when the first finishes, not after the queue's second.
    func testABusyPoolAnswersWhenAJobFinishesNotWhenTheQueueIsEmpty() {
        let finishedJobs = Atomic<Int>(0)
        let gate = DispatchSemaphore(value: 0)
        pool.submit { _ in gate.wait(); finishedJobs.add(1, ordering: .relaxed) }
        for _ in 0..<49 {
            // Jobs that take time are what this test is about: the sleep is the job.
            pool.submit { _ in usleep(20_000); finishedJobs.add(1, ordering: .relaxed) }
        }
        let answered = expectation(description: "answered")
        let jobsDoneWhenAnswered = Atomic<Int>(-1)
        pool.whenProgressing {
            jobsDoneWhenAnswered.store(finishedJobs.load(ordering: .relaxed), ordering: .relaxed)
            answered.fulfill()
        }
        gate.signal()
        wait(for: [answered], timeout: 5)
        XCTAssertLessThanOrEqual(jobsDoneWhenAnswered.load(ordering: .relaxed), 2, "answered after the first job, behind no queue")
    }

    func testAPoolWhoseThreadsAreStuckNeverAnswers() {
        let gate = DispatchSemaphore(value: 0)
        pool.submit { _ in gate.wait() }
        pool.submit { _ in }
        let answered = expectation(description: "answered")
        answered.isInverted = true
        pool.whenProgressing { answered.fulfill() }
        wait(for: [answered], timeout: 0.5)
        let afterwards = expectation(description: "answered once the thread is free")
        pool.whenProgressing { afterwards.fulfill() }
        gate.signal()
        wait(for: [afterwards], timeout: 5)
    }

    /// An idle module host process has no pool thread: they start with the first job (issue 20, idle RSS).
    func testThreadsStartWithTheFirstJob() {
        XCTAssertFalse(pool.isStarted)
        runJob(expecting: .active)
        XCTAssertTrue(pool.isStarted)
    }

    func testAJobAfterTheShutdownOfAPoolThatNeverStartedIsCancelled() throws {
        try pool.syncShutdownGracefully()
        runJob(expecting: .cancelled)
        XCTAssertFalse(pool.isStarted)
    }

    private func runJob(expecting expected: NIOThreadPool.WorkItemState, line: UInt = #line) {
        let ran = expectation(description: "ran")
        pool.submit { state in
            XCTAssertEqual(state, expected, line: line)
            ran.fulfill()
        }
        wait(for: [ran], timeout: 5)
    }
}
