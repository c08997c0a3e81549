import Foundation
import XCTest

/// Polls `condition` until it holds or `timeout` passes; fails the test naming `what` on timeout. For what
/// has no event to wait on (a counter in another process, a connection's state); an error `condition`
/// throws ends the wait. Returns whether the condition held.
@discardableResult
package func waitUntil(
    _ what: String, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            XCTFail("timed out waiting for \(what)", file: file, line: line)
            return false
        }
        try await Task.sleep(for: WaitPolling.interval)
    }
    return true
}

/// `waitUntil` for synchronous tests (blocking sockets), on the calling thread. (A name of its own: as an
/// overload, an async test's closure would pick it and block a thread of the concurrency pool.)
@discardableResult
package func blockingWaitUntil(
    _ what: String, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
    _ condition: () throws -> Bool
) throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else {
            XCTFail("timed out waiting for \(what)", file: file, line: line)
            return false
        }
        Thread.sleep(forTimeInterval: WaitPolling.seconds)
    }
    return true
}

/// How often `waitUntil` looks again: the condition has no event to wait on, so this pause is the wait itself.
private enum WaitPolling {
    static let interval = Duration.milliseconds(10)
    static let seconds = 0.01
}
