/// Swift values to JSON values and back, for arguments and results of typed interfaces: the common types
/// directly, anything else through its `Codable` conformance.
public enum RPCValueEncoding {
    /// `value`'s JSON form; a number JSON cannot carry (NaN, infinity) throws.
    public static func value<Value: Encodable>(_ value: Value) throws -> JSONValue {
        switch value {
        case let value as JSONValue: return value
        case let value as String: return .string(value)
        case let value as Bool: return .bool(value)
        case let value as Int: return .number(value)
        case let value as Double where value.isFinite: return .number(value)
        default: return try JSONValue(parsing: ResultEncoding.encode(value))
        }
    }

    /// An argument as a member of a by-name params object: nil (left out) for an absent `Optional`.
    public static func argument<Value: Encodable>(_ value: Value) throws -> JSONValue? {
        if let optional = value as? any OptionalArgument, optional.isAbsent { return nil }
        return try self.value(value)
    }

    /// A result or error data from the wire as `type`.
    public static func decode<Value: Decodable>(_ type: Value.Type, from value: JSONValue) throws -> Value {
        switch Value.self {
        case is JSONValue.Type: return value as! Value
        case is Double.Type: if let number = value.doubleValue { return number as! Value }
        case is String.Type: if let text = value.stringValue { return text as! Value }
        case is Bool.Type: if let flag = value.boolValue { return flag as! Value }
        default: break
        }
        return try JSONValueDecoder().decode(Value.self, from: value)
    }
}

/// `Optional` arguments, recognised at run time.
protocol OptionalArgument {
    var isAbsent: Bool { get }
}

extension Optional: OptionalArgument {
    var isAbsent: Bool { self == nil }
}
