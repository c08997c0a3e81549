/// Why and where a JSON text was rejected.
///
/// `offset` is the 0-based byte offset into the scanned buffer at which the problem was detected: the offending
/// byte, or the end of the input for `.unexpectedEnd`. For multi-byte problems (a bad escape, a malformed UTF-8
/// sequence, a malformed number) it points at the byte where the check failed.
public struct JSONSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// The input ended inside a value, or before any value.
        case unexpectedEnd
        /// A byte that the grammar does not allow at this position (outside strings only ASCII is allowed).
        case unexpectedByte(UInt8)
        /// A backslash not followed by one of `"\/bfnrt` or by `u` and four hex digits.
        case invalidEscape
        /// A malformed, overlong, truncated or out-of-range UTF-8 sequence inside a string.
        case invalidUTF8
        /// A number that does not follow the JSON grammar (leading zero, missing digits, ...).
        case invalidNumber
        /// A raw byte below 0x20 inside a string; JSON requires those to be escaped.
        case controlCharacterInString
        /// A container would be nested deeper than `limit` levels.
        case tooDeep(limit: Int)
        /// Something other than whitespace follows a complete value.
        case trailingData
    }

    public var reason: Reason
    public var offset: Int

    public init(reason: Reason, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// One line, e.g. "unexpected byte '}' at offset 12" or "nesting deeper than 64 at offset 300".
    public var description: String {
        let what: String
        switch reason {
        case .unexpectedEnd: what = "unexpected end of input"
        case .unexpectedByte(let byte): what = "unexpected byte \(Self.describe(byte))"
        case .invalidEscape: what = "invalid escape sequence"
        case .invalidUTF8: what = "invalid UTF-8"
        case .invalidNumber: what = "invalid number"
        case .controlCharacterInString: what = "unescaped control character in string"
        case .tooDeep(let limit): what = "nesting deeper than \(limit)"
        case .trailingData: what = "unexpected data after the value"
        }
        return "\(what) at offset \(offset)"
    }

    /// Printable ASCII is quoted as itself; anything else as hex, so the message stays one readable line.
    private static func describe(_ byte: UInt8) -> String {
        if byte > 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        let hex = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0x0\(hex)" : "0x\(hex)"
    }
}
