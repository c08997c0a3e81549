// Scalar tokens: strings (with escape and UTF-8 validation), numbers and the three literals.

extension JSONScanner {
    /// Scans a string whose opening quote is at `offset`; leaves `offset` past the closing quote.
    /// Returns whether the string contains escapes.
    @inlinable @inline(__always)
    mutating func scanStringBody() throws(JSONSyntaxError) -> Bool {
        // Most strings of an envelope (names, "2.0", short ids) are plain ASCII closed within the eight bytes
        // after the quote: one word tells, or two. Near the end of the input the word is the input's last eight bytes
        // shifted down, its missing bytes zeros, which count as special but lie past `remaining`.
        let start = offset &+ 1
        let remaining = bytes.count &- start
        var word: UInt64 = 0
        if remaining >= 8 {
            word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt64.self))
        } else if remaining > 0 && bytes.count >= 8 {
            word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: bytes.count &- 8, as: UInt64.self))
                &>> UInt64(truncatingIfNeeded: (8 &- remaining) &<< 3)
        }
        var first = Self.specialBytes(word).trailingZeroBitCount &>> 3
        if first == 8 && remaining >= 16 {
            // Method names are often longer: a second word before the general loop.
            let next = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: start &+ 8, as: UInt64.self))
            first = 8 &+ Self.specialBytes(next).trailingZeroBitCount &>> 3
        }
        if first < remaining && first < 16 && bytes[start &+ first] == UInt8(ascii: "\"") {
            offset = start &+ first &+ 1
            return false
        }
        return try scanStringBodyByRuns()
    }

    /// `scanStringBody` for any string: runs of plain ASCII eight bytes at a time, escapes and UTF-8 between.
    @usableFromInline
    mutating func scanStringBodyByRuns() throws(JSONSyntaxError) -> Bool {
        let end = bytes.count
        var i = offset &+ 1
        var hasEscapes = false
        while true {
            i = skipPlainASCII(from: i, end: end)
            guard i < end else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: i) }
            let byte = bytes[i]
            switch byte {
            case UInt8(ascii: "\""):
                offset = i &+ 1
                return hasEscapes
            case UInt8(ascii: "\\"):
                hasEscapes = true
                i = try validateEscape(at: i, end: end)
            case 0..<0x20:
                throw JSONSyntaxError(reason: .controlCharacterInString, offset: i)
            case 0x80...:
                i = try validateUTF8Sequence(at: i, end: end)
            default:
                i &+= 1
            }
        }
    }

    /// Returns the index of the first byte at or after `start` that is a quote, a backslash, a control
    /// character or non-ASCII, or `end`. Most string content is plain ASCII: one word first (text dense with
    /// escapes or non-ASCII stops there, as before), then sixteen bytes at a time while the run lasts, the block
    /// that ends it and the tail a word at a time.
    @inline(__always)
    private func skipPlainASCII(from start: Int, end: Int) -> Int {
        var i = start
        if end &- i >= 8 {
            let flags = Self.specialBytes(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
            if flags != 0 { return i &+ flags.trailingZeroBitCount &>> 3 }
            i &+= 8
            while end &- i >= 16 && Self.isPlainASCII(bytes.loadUnaligned(fromByteOffset: i, as: SIMD16<UInt8>.self)) {
                i &+= 16
            }
        }
        while end &- i >= 8 {
            let flags = Self.specialBytes(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
            if flags != 0 { return i &+ flags.trailingZeroBitCount &>> 3 }
            i &+= 8
        }
        while i < end {
            let byte = bytes[i]
            if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return i }
            i &+= 1
        }
        return i
    }

    /// The high bit of each byte of `word` (eight string bytes, the first lowest) that is a quote, a backslash,
    /// a control character or non-ASCII; bits above the lowest may be spurious. Classic "has a byte less than
    /// n" tests: borrows only propagate upwards from a byte that truly matches, so the lowest flag is exact.
    @inlinable
    static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let special =
            ((word &- ones &* 0x20) & ~word)
            | ((quote &- ones) & ~quote)
            | ((backslash &- ones) & ~backslash)
            | word
        return special & 0x8080_8080_8080_8080
    }

    /// Whether none of sixteen string bytes is a quote, a backslash, a control character or non-ASCII: three
    /// compares and a mask test (SSE2's `pcmpgtb`, `pcmpeqb`, `pmovmskb`), twice the bytes of a `specialBytes`
    /// word for about the same work. Read as signed, a byte of 0x80 or more is negative, so one signed compare
    /// against 0x20 finds control characters and non-ASCII alike.
    @inline(__always)
    static func isPlainASCII(_ block: SIMD16<UInt8>) -> Bool {
        // Spelled with concrete types and a bit cast: the generic conversions and literals are not lowered to
        // vector instructions, and run element by element.
        let signed = unsafeBitCast(block, to: SIMD16<Int8>.self)
        let control = signed .< SIMD16<Int8>(repeating: 0x20)
        let quote = block .== SIMD16<UInt8>(repeating: 0x22)
        let backslash = block .== SIMD16<UInt8>(repeating: 0x5C)
        return !any(control .| quote .| backslash)
    }

    /// Validates the escape whose backslash is at `i`; returns the index after it.
    private func validateEscape(at i: Int, end: Int) throws(JSONSyntaxError) -> Int {
        guard i &+ 1 < end else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: i &+ 1) }
        switch bytes[i &+ 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return i &+ 2
        case UInt8(ascii: "u"):
            // Surrogates need no pairing check here: JSON allows lone ones textually; decoding replaces them.
            for j in (i &+ 2)..<(i &+ 6) {
                guard j < end else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: j) }
                guard JSONString.hexValue(bytes[j]) != nil else {
                    throw JSONSyntaxError(reason: .invalidEscape, offset: j)
                }
            }
            return i &+ 6
        default:
            throw JSONSyntaxError(reason: .invalidEscape, offset: i &+ 1)
        }
    }

    /// Validates the UTF-8 sequence whose lead byte (>= 0x80) is at `i` against the well-formed byte sequences
    /// of Unicode Table 3-7; returns the index after it. Errors point at the lead byte.
    private func validateUTF8Sequence(at i: Int, end: Int) throws(JSONSyntaxError) -> Int {
        let lead = bytes[i]
        let length: Int
        // The allowed range of the second byte is what excludes overlongs, surrogates and values > U+10FFFF.
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw JSONSyntaxError(reason: .invalidUTF8, offset: i)
        }
        var j = i &+ 1
        while j < i &+ length {
            guard j < end else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: j) }
            let byte = bytes[j]
            guard byte >= low && byte <= high else { throw JSONSyntaxError(reason: .invalidUTF8, offset: i) }
            low = 0x80
            high = 0xBF
            j &+= 1
        }
        return j
    }

    /// Scans a number starting at `offset` (a '-' or a digit); leaves `offset` after its last byte.
    /// What follows the number is for the caller to judge, except that a digit after a leading zero is
    /// reported here as `.invalidNumber`.
    @usableFromInline
    mutating func scanNumber() throws(JSONSyntaxError) {
        let end = bytes.count
        var i = offset
        if bytes[i] == UInt8(ascii: "-") { i &+= 1 }
        guard i < end, isDigit(bytes[i]) else { throw JSONSyntaxError(reason: .invalidNumber, offset: i) }
        if bytes[i] == UInt8(ascii: "0") {
            i &+= 1
            if i < end && isDigit(bytes[i]) { throw JSONSyntaxError(reason: .invalidNumber, offset: i) }
        } else {
            i = skipDigits(from: i &+ 1, end: end)
        }
        if i < end && bytes[i] == UInt8(ascii: ".") {
            i &+= 1
            guard i < end, isDigit(bytes[i]) else { throw JSONSyntaxError(reason: .invalidNumber, offset: i) }
            i = skipDigits(from: i &+ 1, end: end)
        }
        if i < end && (bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E")) {
            i &+= 1
            if i < end && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) { i &+= 1 }
            guard i < end, isDigit(bytes[i]) else { throw JSONSyntaxError(reason: .invalidNumber, offset: i) }
            i = skipDigits(from: i &+ 1, end: end)
        }
        offset = i
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    private func skipDigits(from start: Int, end: Int) -> Int {
        var i = start
        while i < end && isDigit(bytes[i]) { i &+= 1 }
        return i
    }

    /// Scans `true`, `false` or `null` (given as ASCII) starting at `offset`.
    @usableFromInline
    mutating func scanLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let end = bytes.count
        let expected = literal.utf8Start  // compile-time ASCII literals always have a pointer representation
        for k in 0..<literal.utf8CodeUnitCount {
            let i = offset &+ k
            guard i < end else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: i) }
            guard bytes[i] == expected[k] else { throw JSONSyntaxError(reason: .unexpectedByte(bytes[i]), offset: i) }
        }
        offset &+= literal.utf8CodeUnitCount
    }
}
