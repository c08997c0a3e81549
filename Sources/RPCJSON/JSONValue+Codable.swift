/// Codable through a single-value container, for embedding JSON values in `Codable` types.
///
/// This conversion is lossy where the coder's number types are: decoding tries `Int` first, then `Double`, so a
/// literal like 123456789012345678901234567890 or 0.1000000000000000000001 comes back rounded. Encoding writes
/// numbers that are exact integers in `Int` range as `Int`, other finite numbers as `Double`, and literals out
/// of `Double`'s range as their text in a string. Use `JSONValue(parsing:)` / `serialized()` for exactness.
extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .number(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "not a null, bool, number, string, array or object")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let text):
            if let value = intValue {
                try container.encode(value)
            } else if let value = doubleValue {
                try container.encode(value)
            } else if JSONNumberText.isValid(text) {
                try container.encode(text)
            } else {
                throw EncodingError.invalidValue(
                    self, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "\(text) is not a JSON number"))
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
