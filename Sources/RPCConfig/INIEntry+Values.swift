package import RPCProtocol

/// Typed readings of an assignment's value. Each throws a `ConfigError` at the entry's file and
/// line that quotes the value, names the key and says what form was expected, e.g.
///
///     /etc/rpcd/rpcd.conf:7: invalid value '16 MB' for MaxFrameSize=: expected a size in bytes …
///
/// None of them accepts an empty value; schemas give empty assignments their own meaning
/// (usually "reset to the default") before calling these.
extension INIEntry {
    /// An error located at this entry, with any message.
    package func error(_ message: String) -> ConfigError {
        ConfigError(file: file, line: line, message: message)
    }

    /// The standard "this value does not parse" error: `invalid value 'V' for Key=: <expected>`.
    /// When the value looks like it ends in a comment, the message says comments need their own line.
    package func invalidValue(expected: String) -> ConfigError {
        let looksCommented = value.contains(" #") || value.contains(" ;") || value.contains("\t#") || value.contains("\t;")
        let hint = looksCommented ? " (comments must be on lines of their own)" : ""
        return error("invalid value '\(value)' for \(key)=: \(expected)\(hint)")
    }

    /// A boolean as systemd reads them: 1/yes/y/true/t/on or 0/no/n/false/f/off, in any case.
    package func boolValue() throws(ConfigError) -> Bool {
        guard let result = ValueSyntax.boolean(value) else {
            throw invalidValue(expected: "expected a boolean: yes or no (also true/false, on/off, 1/0)")
        }
        return result
    }

    /// A decimal integer within `range`.
    package func integerValue(in range: ClosedRange<Int>) throws(ConfigError) -> Int {
        let expected = "expected an integer from \(range.lowerBound) to \(range.upperBound)"
        switch ValueSyntax.integer(value) {
        case .success(let number) where range.contains(number): return number
        case .success, .failure(.overflow), .failure(.negative): throw error("value \(value) for \(key)= is out of range: \(expected)")
        case .failure(.malformed): throw invalidValue(expected: expected)
        }
    }

    /// A size in bytes as systemd reads them with base 1024 (`65536`, `16M`, `1.5G`; suffixes
    /// K, M, G, T, P, E and B, case-sensitive), within `range`.
    package func sizeValue(in range: ClosedRange<Int>) throws(ConfigError) -> Int {
        let bounds = "from \(ValueSyntax.formatSize(range.lowerBound)) to \(ValueSyntax.formatSize(range.upperBound))"
        switch ValueSyntax.size(value) {
        case .success(let bytes) where range.contains(bytes): return bytes
        case .success, .failure(.overflow): throw error("value \(value) for \(key)= is out of range: expected a size \(bounds)")
        case .failure(.negative): throw invalidValue(expected: "a size cannot be negative; expected a size \(bounds)")
        case .failure(.malformed):
            throw invalidValue(expected: "expected a size in bytes with an optional K, M, G or T suffix (base 1024), such as 16M")
        }
    }

    /// A time span as in systemd.time(7) (`30s`, `5min`, `1min 30s`, `500ms`, a bare number is
    /// seconds), or nil for `infinity`. Zero is returned as zero; whether it disables something
    /// is up to the key. A finite span must lie in `range`, when one is given.
    package func timeSpanValue(in range: ClosedRange<Duration>? = nil) throws(ConfigError) -> Duration? {
        switch ValueSyntax.timeSpan(value) {
        case .success(let duration):
            if let duration, let range, !range.contains(duration) {
                throw error(
                    "value \(value) for \(key)= is out of range: expected a time span from "
                        + "\(ValueSyntax.formatTimeSpan(range.lowerBound)) to \(ValueSyntax.formatTimeSpan(range.upperBound))"
                        + " (or infinity)")
            }
            return duration
        case .failure(.overflow): throw error("value \(value) for \(key)= is out of range: the time span is too long")
        case .failure(.negative): throw invalidValue(expected: "a time span cannot be negative")
        case .failure(.malformed):
            throw invalidValue(expected: "expected a time span such as 30s, 5min, 1min 30s or 500ms, or infinity")
        }
    }

    /// One of the log level names (trace … critical), in any case.
    package func logLevelValue() throws(ConfigError) -> LogLevelSetting {
        guard let level = LogLevelSetting(rawValue: value.lowercased()) else {
            let names = LogLevelSetting.allCases.map(\.rawValue).joined(separator: ", ")
            throw invalidValue(expected: "expected one of \(names)")
        }
        return level
    }

    /// An address in one of the forms `RPCEndpoint(parsing:)` accepts: HOST:PORT, [IPV6]:PORT or
    /// an absolute Unix socket path.
    package func endpointValue() throws(ConfigError) -> RPCEndpoint {
        do {
            return try RPCEndpoint(parsing: value)
        } catch {
            // RPCEndpoint's problems already say which form was expected.
            throw invalidValue(expected: error.problem)
        }
    }
}
