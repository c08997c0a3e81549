@testable import RPCModuleHost
import XCTest

/// Handles handed to modules are unguessable tokens (issue 14: call tokens were global and sequential, so one
/// module could answer another's calls by counting).
final class OpaqueHandleTableTests: XCTestCase {
    func testTokensAreNeitherZeroNorSequentialNorRepeated() {
        let table = OpaqueHandleTable<Int>()
        let tokens = (0..<10_000).map { table.insert($0) }
        XCTAssertFalse(tokens.contains(0))
        XCTAssertEqual(Set(tokens).count, tokens.count)
        let neighbours = zip(tokens, tokens.dropFirst()).filter { $1 &- $0 == 1 || $0 &- $1 == 1 }
        XCTAssertTrue(neighbours.isEmpty, "\(neighbours.count) consecutive pairs")
        XCTAssertEqual(table.value(for: tokens[42]), 42)
        XCTAssertEqual(table.remove(tokens[42]), 42)
        XCTAssertNil(table.value(for: tokens[42]), "a removed handle names nothing")
    }
}
