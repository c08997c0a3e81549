import Foundation
@testable import RPCModuleHost
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A method is reported for blocking its event loop by what its thread did, not by the clock alone (issue 40:
/// a 23 ms "block" of an in-memory read on a loaded machine was the thread waiting for a CPU).
final class LoopBlockWatchTests: XCTestCase {
    /// Sleeping is waiting: reported on the first closely measured call after the clock saw it, and only once.
    func testAMethodThatSleepsIsReportedOnce() {
        let watch = LoopBlockWatch()
        XCTAssertNil(watch.run(method: 0) { usleep(15_000) }, "the clock alone makes a suspect, not a report")
        let held = watch.run(method: 0) { usleep(15_000) }
        XCTAssertGreaterThanOrEqual(held ?? .zero, .milliseconds(15))
        XCTAssertNil(watch.run(method: 0) { usleep(15_000) }, "reported once")
        XCTAssertNil(watch.run(method: 0) { usleep(15_000) }, "reported once")
    }

    /// Computing past the limit blocks the loop as much as waiting does.
    func testAMethodThatComputesPastTheLimitIsReported() {
        let watch = LoopBlockWatch()
        // 15 ms of this thread's own CPU time, however long a loaded machine takes to give it.
        func spin() {
            func cpu() -> Int {
                var now = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
                return now.tv_sec * 1_000_000_000 + now.tv_nsec
            }
            let start = cpu()
            while cpu() - start < 15_000_000 {}
        }
        XCTAssertNil(watch.run(method: 3, spin))
        XCTAssertNotNil(watch.run(method: 3, spin))
    }

    /// A quick method is never measured closely, and a suspect that does not block again is cleared: only the
    /// method that blocked is reported.
    func testQuickCallsAndOtherMethodsAreNotReported() {
        let watch = LoopBlockWatch()
        for _ in 0..<100 { XCTAssertNil(watch.run(method: 1) {}) }
        XCTAssertNil(watch.run(method: 2) { usleep(15_000) })
        for _ in 0..<(LoopBlockWatch.watchedCalls + 5) { XCTAssertNil(watch.run(method: 2) {}) }
        XCTAssertNil(watch.run(method: 1) {})
        // Method 2 is no suspect any more: the next slow call makes it one again, the one after is measured.
        XCTAssertNil(watch.run(method: 2) { usleep(15_000) })
        XCTAssertNotNil(watch.run(method: 2) { usleep(15_000) })
    }
}
