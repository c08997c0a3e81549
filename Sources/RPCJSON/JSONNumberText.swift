/// Helpers for number literals kept as text by `JSONValue.number`.
enum JSONNumberText {
    /// Whether `text` is exactly one JSON number, with nothing around it.
    static func isValid(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { buffer in
            let bytes = UnsafeRawBufferPointer(buffer)
            guard let first = bytes.first, first == UInt8(ascii: "-") || (first &- UInt8(ascii: "0")) < 10 else {
                return false
            }
            var scanner = JSONScanner(bytes: bytes, maxDepth: 0)
            do throws(JSONSyntaxError) {
                try scanner.scanNumber()
            } catch {
                return false
            }
            return scanner.offset == bytes.count
        }
    }

    /// The literal's exact value when it is an integer in `Int` range ("1.0", "1e3" and "-0" count), else nil.
    /// Works on the digits, never through `Double`, so values beyond 2^53 are exact.
    static func exactInteger(_ text: String) -> Int? {
        guard isValid(text) else { return nil }
        var digits: [UInt8] = []  // significant digits, integer and fraction part joined
        var exponent = 0  // power of ten applied to `digits`
        var negative = false
        var inFraction = false
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "-"): negative = true
            case UInt8(ascii: "."): inFraction = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                exponent &+= parseExponent(&iterator)
            default:
                if digits.isEmpty && byte == UInt8(ascii: "0") {
                    if inFraction { exponent &-= 1 }
                    continue
                }
                digits.append(byte &- UInt8(ascii: "0"))
                if inFraction { exponent &-= 1 }
            }
        }
        guard !digits.isEmpty else { return 0 }
        while digits.last == 0 {
            digits.removeLast()
            exponent &+= 1
        }
        // Int.max has 19 digits; anything longer cannot fit, and a fraction left over is not an integer.
        guard exponent >= 0, digits.count &+ exponent <= 19 else { return nil }
        var value = 0
        for digit in digits + [UInt8](repeating: 0, count: exponent) {
            // Accumulate towards the sign so Int.min is representable.
            let (scaled, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative ? scaled.subtractingReportingOverflow(Int(digit)) : scaled.addingReportingOverflow(Int(digit))
            guard !overflow1 && !overflow2 else { return nil }
            value = next
        }
        return value
    }

    /// Reads the exponent's sign and digits, saturating: beyond a million the result is out of range anyway.
    private static func parseExponent(_ iterator: inout String.UTF8View.Iterator) -> Int {
        var sign = 1
        var value = 0
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): continue
            case UInt8(ascii: "-"): sign = -1
            default: value = min(value &* 10 &+ Int(byte &- UInt8(ascii: "0")), 1_000_000)
            }
        }
        return sign &* value
    }

    /// Shortest text that reads back as `value`. Integral values below 2^53 in magnitude are written as
    /// integers ("2", "-0"), others as Swift's shortest round-trip form ("1.5", "1e-05", "1e+16").
    static func text(for value: Double) -> String {
        guard value.isFinite else { return value.description }  // "nan", "inf", "-inf": not JSON, refused later
        if value == 0 { return value.sign == .minus ? "-0" : "0" }
        if value.magnitude < 9_007_199_254_740_992, value.rounded(.towardZero) == value {
            return String(Int(value))
        }
        let text = value.description
        assert(isValid(text), "Double.description produced a non-JSON number: \(text)")
        return text
    }
}
