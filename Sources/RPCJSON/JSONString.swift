/// Decoding, comparing and writing JSON string literals.
///
/// `decode` and `token(_:equals:)` expect tokens validated by `JSONScanner` (quotes included). Given anything
/// else they do not crash: malformed escapes become U+FFFD and invalid UTF-8 is repaired the way
/// `String(decoding:as:)` repairs it.
public enum JSONString {
    /// Decodes a validated string token (quotes included) into a Swift String. A lone surrogate escape
    /// decodes to U+FFFD.
    public static func decode(_ token: UnsafeRawBufferPointer) -> String {
        let inner = content(of: token)
        guard inner.contains(UInt8(ascii: "\\")) else {
            // Copied, then validated (and repaired) as `String(decoding:)` does, but cheaper for short names.
            return String(unsafeUninitializedCapacity: inner.count) { output in
                UnsafeMutableRawBufferPointer(output).copyMemory(from: inner)
                return inner.count
            }
        }
        // A valid escape is at least as long as its UTF-8 encoding, so the content length bounds the output;
        // the extra half covers malformed "\u" (2 bytes becoming U+FFFD, 3 bytes) in unvalidated tokens.
        return String(unsafeUninitializedCapacity: inner.count &+ inner.count &>> 1) { output in
            var count = 0
            _ = unescape(inner, from: 0) { byte in
                // Only a malformed token could outgrow the buffer; stop rather than write past it.
                guard count < output.count else { return false }
                output[count] = byte
                count &+= 1
                return true
            }
            return count
        }
    }

    /// Whether a validated token (quotes included) equals `literal` after decoding, compared as UTF-8 bytes
    /// (no Unicode normalization). Never allocates; tokens without escapes are compared byte for byte.
    public static func token(_ token: UnsafeRawBufferPointer, equals literal: StaticString) -> Bool {
        let inner = content(of: token)
        return literal.withUTF8Buffer { expected in
            var i = 0
            while i < inner.count {
                let byte = inner[i]
                // Up to the first escape the token's bytes are its decoded bytes.
                if byte == UInt8(ascii: "\\") { break }
                guard i < expected.count, byte == expected[i] else { return false }
                i &+= 1
            }
            if i == inner.count { return i == expected.count }
            var k = i
            let complete = unescape(inner, from: i) { byte in
                guard k < expected.count, expected[k] == byte else { return false }
                k &+= 1
                return true
            }
            return complete && k == expected.count
        }
    }

    /// Appends `s` as a JSON string literal, quotes included, escaping '"', '\\', and control characters
    /// (\b \f \n \r \t, others as \u00XX). Non-ASCII is written as UTF-8, not escaped; '/' is not escaped.
    public static func appendQuoted(_ s: some StringProtocol, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { buffer in
            appendEscaped(UnsafeRawBufferPointer(buffer), to: &output)
        }
        if done == nil {
            for byte in s.utf8 {
                if needsEscape(byte) { appendEscape(for: byte, to: &output) } else { output.append(byte) }
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// The value of an ASCII hex digit, or nil.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }

    /// The bytes between the quotes; tolerates a token without them.
    private static func content(of token: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var lower = 0
        var upper = token.count
        if upper > 0 && token[0] == UInt8(ascii: "\"") { lower = 1 }
        if upper > lower && token[upper &- 1] == UInt8(ascii: "\"") { upper &-= 1 }
        return UnsafeRawBufferPointer(rebasing: token[lower..<upper])
    }

    /// Feeds the decoded UTF-8 bytes of `inner[start...]` to `sink` until it returns false.
    /// Returns whether the whole content was fed.
    private static func unescape(
        _ inner: UnsafeRawBufferPointer, from start: Int, _ sink: (UInt8) -> Bool
    ) -> Bool {
        var i = start
        let end = inner.count
        while i < end {
            let byte = inner[i]
            guard byte == UInt8(ascii: "\\"), i &+ 1 < end else {
                guard sink(byte) else { return false }
                i &+= 1
                continue
            }
            let simple: UInt8?
            switch inner[i &+ 1] {
            case UInt8(ascii: "b"): simple = 0x08
            case UInt8(ascii: "f"): simple = 0x0C
            case UInt8(ascii: "n"): simple = 0x0A
            case UInt8(ascii: "r"): simple = 0x0D
            case UInt8(ascii: "t"): simple = 0x09
            case UInt8(ascii: "u"): simple = nil
            case let other: simple = other  // '"', '\\' and '/' stand for themselves
            }
            if let simple {
                guard sink(simple) else { return false }
                i &+= 2
                continue
            }
            let (scalar, length) = unicodeEscape(inner, at: i)
            for unit in UTF8.encode(scalar)! {
                guard sink(unit) else { return false }
            }
            i &+= length
        }
        return true
    }

    /// Decodes the `\uXXXX` escape at `i` (joining a following low-surrogate escape); returns the scalar and
    /// the number of bytes used. Lone surrogates and malformed escapes become U+FFFD.
    private static func unicodeEscape(_ inner: UnsafeRawBufferPointer, at i: Int) -> (Unicode.Scalar, Int) {
        guard let unit = hexQuad(inner, at: i &+ 2) else { return ("\u{FFFD}", 2) }
        switch unit {
        case 0xD800...0xDBFF:
            if i &+ 11 < inner.count, inner[i &+ 6] == UInt8(ascii: "\\"), inner[i &+ 7] == UInt8(ascii: "u"),
                let low = hexQuad(inner, at: i &+ 8), (0xDC00...0xDFFF).contains(low)
            {
                let value = 0x10000 &+ ((UInt32(unit) &- 0xD800) &<< 10) &+ (UInt32(low) &- 0xDC00)
                return (Unicode.Scalar(value)!, 12)
            }
            return ("\u{FFFD}", 6)
        case 0xDC00...0xDFFF:
            return ("\u{FFFD}", 6)
        default:
            return (Unicode.Scalar(unit)!, 6)
        }
    }

    private static func hexQuad(_ inner: UnsafeRawBufferPointer, at i: Int) -> UInt16? {
        guard i &+ 4 <= inner.count else { return nil }
        var value: UInt16 = 0
        for j in i..<(i &+ 4) {
            guard let digit = hexValue(inner[j]) else { return nil }
            value = value &<< 4 | UInt16(digit)
        }
        return value
    }

    @inline(__always)
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Copies unescaped runs in bulk; most strings have no byte that needs escaping.
    private static func appendEscaped(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        var runStart = 0
        for i in 0..<bytes.count where needsEscape(bytes[i]) {
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<i]))
            appendEscape(for: bytes[i], to: &output)
            runStart = i &+ 1
        }
        output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart...]))
    }

    private static func appendEscape(for byte: UInt8, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            let digits: StaticString = "0123456789abcdef"
            output.append(UInt8(ascii: "u"))
            output.append(UInt8(ascii: "0"))
            output.append(UInt8(ascii: "0"))
            output.append(digits.utf8Start[Int(byte &>> 4)])
            output.append(digits.utf8Start[Int(byte & 0x0F)])
        }
    }
}
