/// Service names: the prefix of a method name (`calc` in `calc.add`), a handler's `Service=`, a Swift module's
/// `name`, and the DNS-SD subtype it is advertised under (`_calc._sub._rpcd._tcp`).
///
/// Because every service is also a DNS-SD subtype, the rule is RFC 6335 §5.1's: 1 to 15 characters of letters,
/// digits and hyphens, at least one letter, no hyphen at either end or next to another. rpcd's own services
/// are lower case only, so that method names are unambiguous; DNS-SD itself compares without case, so a name
/// typed to browse may use either.
public enum ServiceName {
    /// The rule for rpcd's services, phrased for error messages.
    public static let rule =
        "1 to 15 lower-case letters, digits and hyphens, with at least one letter, not starting or ending with a hyphen and without two hyphens in a row (RFC 6335)"
    /// RFC 6335's rule as DNS-SD applies it (any case), phrased for error messages.
    public static let dnssdRule =
        "1 to 15 letters, digits and hyphens, with at least one letter, not starting or ending with a hyphen and without two hyphens in a row (RFC 6335)"

    /// Whether `name` may name an rpcd service.
    public static func isValid(_ name: String) -> Bool {
        problem(with: name, allowingUpperCase: false) == nil
    }

    /// What is wrong with `name` ("two hyphens in a row"), or nil when it follows the rule.
    public static func problem(with name: String, allowingUpperCase: Bool) -> String? {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty else { return "empty service name" }
        guard bytes.count <= 15 else { return "\(bytes.count) characters is too long" }
        let hyphen = UInt8(ascii: "-")
        var previous: UInt8 = 0
        var letters = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"): letters += 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z") where allowingUpperCase: letters += 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): return "upper-case letter"
            case UInt8(ascii: "0")...UInt8(ascii: "9"): break
            case hyphen where previous == hyphen: return "two hyphens in a row"
            case hyphen: break
            default: return "invalid character"
            }
            previous = byte
        }
        guard bytes.first != hyphen, bytes.last != hyphen else { return "starts or ends with a hyphen" }
        guard letters > 0 else { return "no letter" }
        return nil
    }
}

/// Names inside a service: methods (`add` in `calc.add`), their parameters, and events. A letter, then
/// letters, digits and `_`, at most 64 characters: what is an identifier in every language a client or a
/// module may be written in, so generated code can use the names as they are.
public enum MemberName {
    /// The rule, phrased for error messages.
    public static let rule = "a letter, then letters, digits and '_', at most 64 characters"

    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), let first = bytes.first, isLetter(first) else { return false }
        return bytes.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
