/// Validating scanner over UTF-8 bytes. Offsets index `bytes` (0-based). Never recurses: nesting is tracked
/// with an explicit stack, so arbitrarily deep input produces `.tooDeep`, never a stack overflow.
///
/// Strict RFC 8259: no comments, no trailing commas, no leading zeros, no NaN, no single quotes, no byte order
/// mark; control characters (< 0x20) in strings rejected, escapes validated (\uXXXX incl. surrogate pairs; a
/// lone surrogate escape is accepted as JSON allows it textually and decodes to U+FFFD), UTF-8 validated inside
/// strings (overlongs, surrogates encoded in UTF-8, > U+10FFFF, truncated sequences rejected). Bytes outside
/// strings must be ASCII JSON grammar.
///
/// The scanner reports kinds and byte ranges and never builds values; scalars and containers up to 64 levels
/// deep are scanned without allocating. On error the `offset` is unspecified; the thrown error carries the
/// position. The buffer must stay valid while the scanner is used.
public struct JSONScanner {
    public let bytes: UnsafeRawBufferPointer
    public var offset: Int
    public let maxDepth: Int

    public init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.offset = 0
        self.maxDepth = maxDepth
    }

    /// Skips space, tab, line feed and carriage return.
    @inlinable @inline(__always)
    public mutating func skipWhitespace() {
        // Most tokens follow the one before directly: one compare settles that, without a call.
        if offset < bytes.count && bytes[offset] > 0x20 { return }
        skipWhitespaceRun()
    }

    @usableFromInline
    mutating func skipWhitespaceRun() {
        let end = bytes.count
        var i = offset
        while i < end {
            switch bytes[i] {
            case 0x20, 0x0A, 0x0D, 0x09: i &+= 1
            default:
                offset = i
                return
            }
        }
        offset = i
    }

    /// Whether `bytes` hold nothing but whitespace, or nothing at all: how a JSON text that is absent looks.
    public static func isBlank(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var scanner = JSONScanner(bytes: bytes, maxDepth: 0)
        return scanner.peekNonWhitespace() == nil
    }

    /// Skips whitespace and returns the next byte without consuming it, or nil at the end of the input.
    @inlinable @inline(__always)
    public mutating func peekNonWhitespace() -> UInt8? {
        if offset < bytes.count {
            let byte = bytes[offset]
            if byte > 0x20 { return byte }
        }
        skipWhitespaceRun()
        return offset < bytes.count ? bytes[offset] : nil
    }

    /// Skips whitespace; if the next byte is `byte`, consumes it and returns true.
    @inlinable @inline(__always)
    public mutating func consume(_ byte: UInt8) -> Bool {
        if byte > 0x20 && offset < bytes.count && bytes[offset] == byte {
            offset &+= 1
            return true
        }
        return consumeAfterWhitespace(byte)
    }

    @usableFromInline
    mutating func consumeAfterWhitespace(_ byte: UInt8) -> Bool {
        guard peekNonWhitespace() == byte else { return false }
        offset &+= 1
        return true
    }

    /// Skips whitespace; throws `.trailingData` if anything remains.
    @inlinable
    public mutating func expectEnd() throws(JSONSyntaxError) {
        skipWhitespace()
        if offset < bytes.count { throw JSONSyntaxError(reason: .trailingData, offset: offset) }
    }

    /// Scans one complete value after optional whitespace.
    ///
    /// `depth` is the number of containers enclosing this value (0 at top level). The value's own containers
    /// count: an array at depth 0 is at level 1; it is an error (`.tooDeep(limit: maxDepth)`, at the offset of
    /// the opening bracket) when any container would be at a level above `maxDepth`. The returned range
    /// excludes surrounding whitespace; for strings it includes the quotes. Leaves `offset` just past the value.
    @inlinable
    public mutating func scanValue(depth: Int) throws(JSONSyntaxError) -> (kind: JSONKind, range: Range<Int>) {
        skipWhitespace()
        guard offset < bytes.count else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: offset) }
        let start = offset
        let first = bytes[start]
        if first == UInt8(ascii: "[") || first == UInt8(ascii: "{") {
            try scanContainer(depth: depth)
            return (first == UInt8(ascii: "[") ? .array : .object, start..<offset)
        }
        let kind = try scanScalar(first)
        return (kind, start..<offset)
    }

    /// Scans a string token after optional whitespace. The range includes the quotes; `hasEscapes` tells
    /// whether `JSONString.decode` has any escapes to resolve.
    @inlinable
    public mutating func scanString() throws(JSONSyntaxError) -> (range: Range<Int>, hasEscapes: Bool) {
        skipWhitespace()
        let start = offset
        guard start < bytes.count else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: start) }
        guard bytes[start] == UInt8(ascii: "\"") else {
            throw JSONSyntaxError(reason: .unexpectedByte(bytes[start]), offset: start)
        }
        let hasEscapes = try scanStringBody()
        return (start..<offset, hasEscapes)
    }

    /// Scans a scalar whose first byte (at `offset`) is `first`.
    @inlinable
    mutating func scanScalar(_ first: UInt8) throws(JSONSyntaxError) -> JSONKind {
        switch first {
        case UInt8(ascii: "\""):
            _ = try scanStringBody()
            return .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try scanNumber()
            return .number
        case UInt8(ascii: "t"):
            try scanLiteral("true")
            return .bool
        case UInt8(ascii: "f"):
            try scanLiteral("false")
            return .bool
        case UInt8(ascii: "n"):
            try scanLiteral("null")
            return .null
        default:
            throw JSONSyntaxError(reason: .unexpectedByte(first), offset: offset)
        }
    }

    /// Scans an array or object starting at `offset` as a state machine over an explicit stack.
    @usableFromInline
    mutating func scanContainer(depth: Int) throws(JSONSyntaxError) {
        var stack = NestingStack()
        let end = bytes.count
        // Each turn of the loop starts at a position where a value is required.
        valueLoop: while true {
            skipWhitespace()
            guard offset < end else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: offset) }
            let byte = bytes[offset]
            if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") {
                // `depth + count + 1` is the level of the container being opened; written as a comparison
                // against `maxDepth - depth` so huge `depth` values cannot overflow.
                guard stack.count < maxDepth &- depth else {
                    throw JSONSyntaxError(reason: .tooDeep(limit: maxDepth), offset: offset)
                }
                let isObject = byte == UInt8(ascii: "{")
                stack.push(isObject: isObject)
                offset &+= 1
                let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if consume(close) {
                    stack.pop()
                } else {
                    if isObject { _ = try scanMemberName() }
                    continue valueLoop
                }
            } else {
                _ = try scanScalar(byte)
            }
            // A value just ended: close as many containers as the input closes, then expect the next value.
            while !stack.isEmpty {
                skipWhitespace()
                guard offset < end else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: offset) }
                let next = bytes[offset]
                let isObject = stack.topIsObject
                if next == UInt8(ascii: ",") {
                    offset &+= 1
                    if isObject { _ = try scanMemberName() }
                    continue valueLoop
                }
                guard next == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else {
                    throw JSONSyntaxError(reason: .unexpectedByte(next), offset: offset)
                }
                offset &+= 1
                stack.pop()
            }
            return
        }
    }
}
