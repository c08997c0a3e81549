/// A JSON value. Numbers keep their literal text so big integers and exact decimals round-trip.
///
/// Equality and hashing are structural and compare number literals as text: `1`, `1.0` and `1e0` are different
/// values. Object keys are Swift `String`s, so keys that differ only in Unicode normalization collide (the last
/// one parsed wins). Operations that walk the tree (serialization, equality) recurse once per nesting level;
/// parsing caps that at `maxDepth`.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// The literal as written, e.g. "-1.5e3". Text that is not a JSON number (say `.number(Double.nan)`'s) is
    /// refused by `checkedSerialization()` and written as `null` by `serialized()`: it never traps.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// An integer number.
    public static func number(_ value: Int) -> JSONValue {
        .number(String(value))
    }

    /// A floating-point number, written as the shortest text that reads back as the same `Double`. Integral
    /// values below 2^53 in magnitude are written without a fraction: `.number(2.0)` is `2`, equal to
    /// `.number(2)`; -0.0 is `-0`. NaN and the infinities have no JSON form: they are kept as Swift writes them
    /// (`nan`, `inf`), so that `checkedSerialization()` refuses the value instead of anything trapping.
    public static func number(_ value: Double) -> JSONValue {
        .number(JSONNumberText.text(for: value))
    }

    /// Whether `text` is a valid JSON number literal, i.e. acceptable as the payload of `.number`.
    public static func isValidNumberLiteral(_ text: String) -> Bool {
        JSONNumberText.isValid(text)
    }

    public var kind: JSONKind {
        switch self {
        case .null: .null
        case .bool: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }

    public var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// The number when its literal is an exact integer in `Int` range ("3", "3.0", "3e0", "-0"); nil for
    /// fractions, out-of-range integers and non-numbers.
    public var intValue: Int? {
        if case .number(let text) = self { JSONNumberText.exactInteger(text) } else { nil }
    }

    /// The number as the nearest `Double`; nil for non-numbers and for literals beyond `Double`'s range.
    public var doubleValue: Double? {
        guard case .number(let text) = self, let value = Double(text), value.isFinite else { return nil }
        return value
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { value } else { nil }
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { value } else { nil }
    }

    /// The member named `key`; nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    /// The element at `index`; nil when out of range or when this is not an array.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }
}
