import RPCJSON
import XCTest

/// Scans `bytes` as one complete document (value, then end) and returns the top-level kind and range.
func scanDocument(_ bytes: [UInt8], maxDepth: Int = 512) -> Result<(kind: JSONKind, range: Range<Int>), JSONSyntaxError> {
    bytes.withUnsafeBytes { buffer in
        var scanner = JSONScanner(bytes: buffer, maxDepth: maxDepth)
        return Result { () throws(JSONSyntaxError) in
            let value = try scanner.scanValue(depth: 0)
            try scanner.expectEnd()
            return value
        }
    }
}

func scanDocument(_ text: String, maxDepth: Int = 512) -> Result<(kind: JSONKind, range: Range<Int>), JSONSyntaxError> {
    scanDocument(Array(text.utf8), maxDepth: maxDepth)
}

/// The error a complete scan of `bytes` throws, or nil when it is accepted.
func scanError(_ bytes: [UInt8], maxDepth: Int = 512) -> JSONSyntaxError? {
    if case .failure(let error) = scanDocument(bytes, maxDepth: maxDepth) { return error }
    return nil
}

func scanError(_ text: String, maxDepth: Int = 512) -> JSONSyntaxError? {
    scanError(Array(text.utf8), maxDepth: maxDepth)
}

/// Bytes of a string literal with `content` between the quotes, for cases that are not valid UTF-8.
func quoted(_ content: [UInt8]) -> [UInt8] {
    [UInt8(ascii: "\"")] + content + [UInt8(ascii: "\"")]
}

/// Runs `body` with a scanner over `text`.
func withScanner<R>(_ text: String, maxDepth: Int = 512, _ body: (inout JSONScanner) throws -> R) throws -> R {
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBytes { buffer in
        var scanner = JSONScanner(bytes: buffer, maxDepth: maxDepth)
        return try body(&scanner)
    }
}

/// Decodes a validated token given as text (quotes included).
func decodeToken(_ token: String) -> String {
    Array(token.utf8).withUnsafeBytes { JSONString.decode($0) }
}

func tokenEquals(_ token: String, _ literal: StaticString) -> Bool {
    Array(token.utf8).withUnsafeBytes { JSONString.token($0, equals: literal) }
}

func quotedBytes(_ text: String) -> [UInt8] {
    var output: [UInt8] = []
    JSONString.appendQuoted(text, to: &output)
    return output
}

/// A small deterministic generator so randomized tests are reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
