import RPCJSON
import XCTest

/// Nesting limits: levels are counted from 1 for the outermost container, and depth never costs stack.
final class ScannerDepthTests: XCTestCase {
    private func nestedArrays(_ levels: Int) -> String {
        String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
    }

    private func nestedObjects(_ levels: Int) -> String {
        String(repeating: #"{"a":"#, count: levels - 1) + "{}" + String(repeating: "}", count: levels - 1)
    }

    func testExactlyMaxDepthIsAcceptedAndOneMoreIsRejected() {
        for maxDepth in [1, 2, 63, 64, 65, 127, 128, 129, 300] {
            XCTAssertNil(scanError(nestedArrays(maxDepth), maxDepth: maxDepth), "arrays at \(maxDepth)")
            XCTAssertNil(scanError(nestedObjects(maxDepth), maxDepth: maxDepth), "objects at \(maxDepth)")
            // The container that would be at level maxDepth + 1 is reported at its opening bracket.
            XCTAssertEqual(
                scanError(nestedArrays(maxDepth + 1), maxDepth: maxDepth),
                JSONSyntaxError(reason: .tooDeep(limit: maxDepth), offset: maxDepth))
            XCTAssertEqual(
                scanError(nestedObjects(maxDepth + 1), maxDepth: maxDepth),
                JSONSyntaxError(reason: .tooDeep(limit: maxDepth), offset: 5 * maxDepth))
        }
    }

    func testMaxDepthZeroAllowsOnlyScalars() {
        XCTAssertNil(scanError("1", maxDepth: 0))
        XCTAssertEqual(scanError("[]", maxDepth: 0), JSONSyntaxError(reason: .tooDeep(limit: 0), offset: 0))
    }

    func testDepthArgumentCountsEnclosingContainers() throws {
        try withScanner("[[1]]", maxDepth: 3) { scanner in
            XCTAssertEqual(try scanner.scanValue(depth: 1).range, 0..<5)  // levels 2 and 3
        }
        try withScanner("[[1]]", maxDepth: 3) { scanner in
            XCTAssertThrowsError(try scanner.scanValue(depth: 2)) { error in
                XCTAssertEqual(error as? JSONSyntaxError, JSONSyntaxError(reason: .tooDeep(limit: 3), offset: 1))
            }
        }
        // Scalars have no level of their own, so they are fine at any depth.
        try withScanner("7", maxDepth: 3) { scanner in
            XCTAssertEqual(try scanner.scanValue(depth: 3).kind, .number)
        }
    }

    func testMixedNestingAcrossTheSixtyFourBitBoundary() {
        // Alternating kinds make any confusion of array and object at the spill boundary a syntax error.
        for levels in [63, 64, 65, 66, 128, 129, 200] {
            var open = ""
            var close = ""
            for level in 0..<levels {
                if level % 3 == 0 {
                    open += #"{"k":"#
                    close = "}" + close
                } else {
                    open += "[0,"
                    close = "]" + close
                }
            }
            XCTAssertNil(scanError(open + "1" + close, maxDepth: levels), "\(levels) levels")
            // Swap the innermost closer of each kind: must be rejected, not silently accepted.
            let wrong = open + "1" + String(close.map { $0 == "]" ? "}" : "]" })
            XCTAssertNotNil(scanError(wrong, maxDepth: levels), "\(levels) levels with wrong closers")
        }
    }

    func testAMillionOpenBracketsAreRejectedWithoutCrashing() {
        let input = [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
        XCTAssertEqual(scanError(input, maxDepth: 512), JSONSyntaxError(reason: .tooDeep(limit: 512), offset: 512))
        // Even with no effective limit the explicit stack copes; the input simply ends.
        XCTAssertEqual(scanError(input, maxDepth: .max), JSONSyntaxError(reason: .unexpectedEnd, offset: 1_000_000))
    }

    func testDeepButBalancedInputWithoutALimitIsAccepted() {
        XCTAssertNil(scanError(nestedArrays(100_000), maxDepth: .max))
    }

    func testValueParsingOfDeepInputThrows() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        XCTAssertThrowsError(try JSONValue(parsing: deep)) { error in
            XCTAssertEqual(error as? JSONSyntaxError, JSONSyntaxError(reason: .tooDeep(limit: 512), offset: 512))
        }
        let deepObjects = String(repeating: #"{"a":"#, count: 100_000)
        XCTAssertThrowsError(try JSONValue(parsing: deepObjects)) { error in
            XCTAssertEqual((error as? JSONSyntaxError)?.reason, .tooDeep(limit: 512))
        }
    }

    func testValueParsingAtTheLimitBuildsTheTree() throws {
        var value = try JSONValue(parsing: nestedArrays(512))
        var levels = 0
        while let inner = value.arrayValue {
            levels += 1
            value = inner.first ?? .null
        }
        XCTAssertEqual(levels, 512)
    }
}
