import RPCJSON

/// What the load generator needs of one reply object: its integer `id` and whether it has an `error` member,
/// read with RPCJSON's `JSONScanner` (the one JSON reader: values are validated and skipped, never built).
///
/// Only the top-level members are looked at. For rpcctl's benchmark, which matches replies to its own calls;
/// `RPCClient` decodes replies fully.
package struct RPCReplySummary: Hashable, Sendable {
    /// The id member when it is an integer literal (as the load generator sends).
    package var id: Int?
    /// Whether the object has an `error` member.
    package var isError: Bool

    package init(id: Int?, isError: Bool) {
        self.id = id
        self.isError = isError
    }

    /// Deep enough for any reply; the summary looks at the top level only.
    static let maxDepth = 512

    /// The summary of a reply object, or nil if `bytes` do not hold exactly one JSON object.
    package init?(_ bytes: UnsafeRawBufferPointer) {
        var scanner = JSONScanner(bytes: bytes, maxDepth: Self.maxDepth)
        var summary = RPCReplySummary(id: nil, isError: false)
        do {
            guard scanner.consume(UInt8(ascii: "{")) else { return nil }
            if !scanner.consume(UInt8(ascii: "}")) {
                repeat {
                    let key = try scanner.scanString().range
                    guard scanner.consume(UInt8(ascii: ":")) else { return nil }
                    let value = try scanner.scanValue(depth: 1)
                    if Self.equals(bytes, key, #""id""#) {
                        summary.id = value.kind == .number ? Self.integer(bytes, value.range) : nil
                    } else if Self.equals(bytes, key, #""error""#) {
                        summary.isError = true
                    }
                } while scanner.consume(UInt8(ascii: ","))
                guard scanner.consume(UInt8(ascii: "}")) else { return nil }
            }
            try scanner.expectEnd()
        } catch {
            return nil
        }
        self = summary
    }

    /// `init(_:)` over an array of bytes (for tests and tools).
    package init?(_ bytes: [UInt8]) {
        guard let summary = bytes.withUnsafeBytes({ RPCReplySummary($0) }) else { return nil }
        self = summary
    }

    /// Whether the bytes in `range` are `text` (a key with its quotes: an escaped key never matches).
    private static func equals(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ text: StaticString) -> Bool {
        guard range.count == text.utf8CodeUnitCount else { return false }
        return (0..<range.count).allSatisfy { bytes[range.lowerBound + $0] == text.utf8Start[$0] }
    }

    /// The integer a number token spells, or nil for a fraction, an exponent or more than 18 digits.
    private static func integer(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        var position = range.lowerBound
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard range.upperBound - position <= 18 else { return nil }
        var value = 0
        while position < range.upperBound {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int(digit)
            position += 1
        }
        return negative ? -value : value
    }
}
