/// The value grammars systemd uses, as pure functions: parse text, or format a value back into
/// text the parser accepts. `INIEntry`'s value accessors wrap these with located errors.
enum ValueSyntax {
    enum Problem: Error, Equatable {
        case malformed
        case negative
        case overflow
    }

    /// systemd's parse_boolean(): 1/yes/y/true/t/on and 0/no/n/false/f/off, any case.
    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "1", "yes", "y", "true", "t", "on": return true
        case "0", "no", "n", "false", "f", "off": return false
        default: return nil
        }
    }

    /// A decimal integer, optionally negative. No `+`, no spaces, no hex: what administrators
    /// mean by a number, and what `rendered()` writes.
    static func integer(_ text: String) -> Result<Int, Problem> {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return .failure(.malformed)
        }
        guard let value = Int(text) else { return .failure(.overflow) }
        return .success(value)
    }

    // MARK: Sizes

    /// Suffixes in the order systemd's parse_size() tries them; compound sizes such as `1G 512M`
    /// must use them in this (descending) order.
    private static let sizeSuffixes: [(suffix: String, factor: UInt64)] = [
        ("E", 1 << 60), ("P", 1 << 50), ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1), ("", 1),
    ]

    /// systemd's parse_size() with base 1024: `65536`, `16M`, `1.5G`, `1G 512M`, `512B`.
    /// Suffixes are case-sensitive and there is no `MB` or `MiB`, exactly as in systemd.
    static func size(_ text: String) -> Result<Int, Problem> {
        let scalars = Array(text.unicodeScalars)
        var position = 0
        var total: UInt64 = 0
        var firstSuffix = 0
        repeat {
            skipWhitespace(scalars, &position)
            if position < scalars.count, scalars[position] == "-" { return .failure(.negative) }
            guard let whole = readDigits(scalars, &position) else { return .failure(.malformed) }
            guard let wholeValue = UInt64(whole) else { return .failure(.overflow) }
            var fraction = 0.0
            if position < scalars.count, scalars[position] == "." {
                position += 1
                // systemd accepts "10.M": the fraction digits are optional.
                if let digits = readDigits(scalars, &position) { fraction = Double("0." + digits) ?? 0 }
            }
            skipWhitespace(scalars, &position)
            guard
                let index = sizeSuffixes.indices.dropFirst(firstSuffix).first(where: {
                    hasPrefix(scalars, at: position, sizeSuffixes[$0].suffix)
                })
            else { return .failure(.malformed) }
            let factor = sizeSuffixes[index].factor
            position += sizeSuffixes[index].suffix.unicodeScalars.count
            firstSuffix = index + 1

            // whole × factor plus a fraction of a factor fits while whole is below max / factor; at exactly that
            // quotient only without a fraction. (Adding 1 to whole for the fraction overflowed at UInt64.max,
            // found by the config fuzzer.)
            let largestWhole = UInt64.max / factor
            guard wholeValue < largestWhole || (wholeValue == largestWhole && fraction == 0) else {
                return .failure(.overflow)
            }
            let (sum, overflow) = total.addingReportingOverflow(wholeValue * factor + UInt64(fraction * Double(factor)))
            guard !overflow else { return .failure(.overflow) }
            total = sum
        } while position < scalars.count
        guard let result = Int(exactly: total) else { return .failure(.overflow) }
        return .success(result)
    }

    /// The shortest exact form: `16M` rather than `16777216`.
    static func formatSize(_ bytes: Int) -> String {
        guard bytes > 0 else { return String(bytes) }
        for (suffix, factor) in sizeSuffixes where factor > 1 && UInt64(bytes) % factor == 0 {
            return "\(UInt64(bytes) / factor)\(suffix)"
        }
        return String(bytes)
    }

    // MARK: Time spans

    /// Units of systemd.time(7), in microseconds. Longest match wins, so `ms` is milliseconds,
    /// `min` and `m` are minutes and `M` is months.
    private static let timeUnits: [(unit: String, microseconds: Int)] = {
        let second = 1_000_000
        let units: [(String, Int)] = [
            ("usec", 1), ("us", 1), ("\u{B5}s", 1), ("\u{3BC}s", 1),
            ("msec", 1000), ("ms", 1000),
            ("seconds", second), ("second", second), ("sec", second), ("s", second),
            ("minutes", 60 * second), ("minute", 60 * second), ("min", 60 * second), ("m", 60 * second),
            ("hours", 3600 * second), ("hour", 3600 * second), ("hr", 3600 * second), ("h", 3600 * second),
            ("days", 86400 * second), ("day", 86400 * second), ("d", 86400 * second),
            ("weeks", 604_800 * second), ("week", 604_800 * second), ("w", 604_800 * second),
            // systemd's month is 30.44 days and its year 365.25 days.
            ("months", 2_629_800 * second), ("month", 2_629_800 * second), ("M", 2_629_800 * second),
            ("years", 31_557_600 * second), ("year", 31_557_600 * second), ("y", 31_557_600 * second),
        ]
        return units.sorted { $0.0.unicodeScalars.count > $1.0.unicodeScalars.count }
    }()

    /// systemd's parse_sec(): `30s`, `5min`, `1min 30s`, `1.5h`, `500ms`; a bare number is seconds;
    /// `infinity` is nil. Resolution is one microsecond, as in systemd.
    static func timeSpan(_ text: String) -> Result<Duration?, Problem> {
        let scalars = Array(text.unicodeScalars)
        var position = 0
        skipWhitespace(scalars, &position)
        if hasPrefix(scalars, at: position, "infinity") {
            position += "infinity".count
            skipWhitespace(scalars, &position)
            return position == scalars.count ? .success(nil) : .failure(.malformed)
        }
        var total = 0
        var sawComponent = false
        while true {
            skipWhitespace(scalars, &position)
            if position == scalars.count { break }
            if scalars[position] == "-" { return .failure(.negative) }
            let whole = readDigits(scalars, &position)
            var fraction: String?
            if position < scalars.count, scalars[position] == "." {
                position += 1
                // Unlike sizes, "3." and "3.s" are rejected, as systemd does.
                guard let digits = readDigits(scalars, &position) else { return .failure(.malformed) }
                fraction = digits
            }
            guard whole != nil || fraction != nil else { return .failure(.malformed) }
            let afterNumber = position
            skipWhitespace(scalars, &position)
            var multiplier = 1_000_000
            if let unit = timeUnits.first(where: { hasPrefix(scalars, at: position, $0.unit) }) {
                multiplier = unit.microseconds
                position += unit.unit.unicodeScalars.count
            } else if position == afterNumber && position < scalars.count {
                return .failure(.malformed)  // "5x", "1.2.3": a number glued to something that is no unit
            }
            guard let wholeValue = Int(whole ?? "0") else { return .failure(.overflow) }
            let (scaled, overflow) = wholeValue.multipliedReportingOverflow(by: multiplier)
            guard !overflow else { return .failure(.overflow) }
            var component = scaled
            // Like systemd: each fraction digit adds digit × unit/10ⁿ, truncated to microseconds.
            var digitWeight = multiplier / 10
            for digit in (fraction ?? "").utf8 {
                let (sum, overflow) = component.addingReportingOverflow(Int(digit - UInt8(ascii: "0")) * digitWeight)
                guard !overflow else { return .failure(.overflow) }
                component = sum
                digitWeight /= 10
            }
            let (sum, sumOverflow) = total.addingReportingOverflow(component)
            guard !sumOverflow else { return .failure(.overflow) }
            total = sum
            sawComponent = true
        }
        return sawComponent ? .success(.microseconds(total)) : .failure(.malformed)
    }

    /// `5min`, `1min 30s`, `1d 2h`, `250ms`; `0` for zero and `infinity` for nil.
    /// Sub-microsecond parts are dropped; negative spans format as `0`.
    static func formatTimeSpan(_ duration: Duration?) -> String {
        guard let duration else { return "infinity" }
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return seconds > 0 ? "infinity" : "0" }
        var remaining = scaled + attoseconds / 1_000_000_000_000
        guard remaining > 0 else { return "0" }
        let units: [(String, Int64)] = [
            ("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000), ("s", 1_000_000), ("ms", 1000), ("us", 1),
        ]
        var parts: [String] = []
        for (unit, size) in units where remaining >= size {
            parts.append("\(remaining / size)\(unit)")
            remaining %= size
        }
        return parts.joined(separator: " ")
    }

    // MARK: Scanning helpers

    private static func skipWhitespace(_ scalars: [Unicode.Scalar], _ position: inout Int) {
        while position < scalars.count, scalars[position] == " " || scalars[position] == "\t" { position += 1 }
    }

    /// Reads a run of ASCII digits; nil (and no movement) when there is none.
    private static func readDigits(_ scalars: [Unicode.Scalar], _ position: inout Int) -> String? {
        let start = position
        while position < scalars.count, ("0"..."9").contains(scalars[position]) { position += 1 }
        guard position > start else { return nil }
        return String(String.UnicodeScalarView(scalars[start..<position]))
    }

    private static func hasPrefix(_ scalars: [Unicode.Scalar], at position: Int, _ prefix: String) -> Bool {
        var index = position
        for scalar in prefix.unicodeScalars {
            guard index < scalars.count, scalars[index] == scalar else { return false }
            index += 1
        }
        return true
    }
}
