import XCTest

/// Polls `condition` until it holds or `timeout` passes; fails the test naming `what` on timeout. For what
/// has no event to wait on (a counter in another process, a connection's state); an error `condition`
/// throws ends the wait.
package func waitUntil(
    _ what: String, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            XCTFail("timed out waiting for \(what)", file: file, line: line)
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
