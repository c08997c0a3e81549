extension JSONValue {
    /// Compact serialization with object keys sorted by their UTF-8 bytes, so equal values always produce
    /// identical bytes (the output is hashed for interface fingerprints). A `.number` whose text is not a JSON
    /// number (NaN, an infinity) is written as `null`; use `checkedSerialization()` for values that must not
    /// change silently, such as a method's result.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        append(to: &output)
        return output
    }

    /// Compact serialization as `serialized()`, refusing a value with a number JSON cannot represent.
    public func checkedSerialization() throws(UnrepresentableNumber) -> [UInt8] {
        if let text = firstInvalidNumber { throw UnrepresentableNumber(text: text) }
        return serialized()
    }

    /// A value held a number JSON has no form for (`nan`, `inf`, or any text that is not a JSON number).
    public struct UnrepresentableNumber: Error, Hashable, Sendable, CustomStringConvertible {
        public var text: String
        public var description: String { "the value holds a number JSON cannot represent: \(text)" }
    }

    /// The text of the first `.number` (depth first) that is not a JSON number; nil when there is none.
    /// Iterative, so a hostile depth cannot exhaust the stack.
    public var firstInvalidNumber: String? {
        var pending: [JSONValue] = [self]
        while let value = pending.popLast() {
            switch value {
            case .number(let text) where !JSONNumberText.isValid(text): return text
            case .array(let elements): pending.append(contentsOf: elements)
            case .object(let members): pending.append(contentsOf: members.values)
            default: continue
            }
        }
        return nil
    }

    /// `serialized()` as a String.
    public var jsonText: String {
        String(decoding: serialized(), as: UTF8.self)
    }

    /// Appends the compact serialization to `output`.
    public func append(to output: inout [UInt8]) {
        write(to: &output, indent: nil)
    }

    /// Human-readable form: 2-space indentation, `"key": value`, sorted keys, empty containers as `[]` / `{}`,
    /// no trailing newline.
    public func prettyPrinted() -> String {
        var output: [UInt8] = []
        write(to: &output, indent: 0)
        return String(decoding: output, as: UTF8.self)
    }

    /// Writes compactly when `indent` is nil, else pretty-printed at that nesting level.
    private func write(to output: inout [UInt8], indent: Int?) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text):
            output.append(contentsOf: (JSONNumberText.isValid(text) ? text : "null").utf8)
        case .string(let text): JSONString.appendQuoted(text, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                Self.newline(&output, indent.map { $0 + 1 })
                element.write(to: &output, indent: indent.map { $0 + 1 })
            }
            if !elements.isEmpty { Self.newline(&output, indent) }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            // Swift's String ordering is by normalized scalars; the fingerprint contract is raw UTF-8 order.
            let keys = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (position, key) in keys.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                Self.newline(&output, indent.map { $0 + 1 })
                JSONString.appendQuoted(key, to: &output)
                output.append(UInt8(ascii: ":"))
                if indent != nil { output.append(UInt8(ascii: " ")) }
                members[key]!.write(to: &output, indent: indent.map { $0 + 1 })
            }
            if !members.isEmpty { Self.newline(&output, indent) }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ output: inout [UInt8], _ indent: Int?) {
        guard let indent else { return }
        output.append(UInt8(ascii: "\n"))
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }
}
