public import RPCJSON
public import RPCProtocol

/// Binds a call's params to declared parameters, checks them, and decodes them: the one binder of the
/// built-in services and the Swift module SDK alike, so a method binds params the same way wherever it runs.
///
/// Rules:
/// - by position (`[1, 2]`): element *i* is the *i*-th declared parameter; more elements than parameters is
///   -32602; missing trailing elements are absent.
/// - by name (`{"a": 1, "b": 2}`): the members are the parameters; a name that is not declared is -32602.
/// - no params at all: every parameter is absent.
/// - `null` for an optional parameter counts as absent (so `[null, 5]` skips the first one).
/// - an absent required parameter is -32602 "missing parameter 'a'"; an optional one is simply not in the
///   object `Params` is decoded from, so it must be an `Optional` property.
/// - each present value is checked against the parameter's schema (`CompiledSchema`), then `Params` is decoded
///   from them by `JSONValueDecoder`; a `DecodingError` is -32602 with a detail naming the field.
///
/// Pure functions; thread-agnostic.
public enum ParamsBinding {
    /// The params as an object keyed by parameter name, with absent optional parameters left out. (A method
    /// called often keeps a `ParamsBinder` instead, which reads the schemas once.)
    public static func bind(_ params: JSONValue, to declared: [RPCParam]) throws(RPCError) -> [String: JSONValue] {
        try ParamsBinder(declared).bind(params).members
    }

    /// Decodes `type` from the bound members (exactly: `JSONValue` properties get the values as sent), turning
    /// a `DecodingError` into -32602 with a detail.
    public static func decode<Params: Decodable>(_ type: Params.Type, from members: [String: JSONValue]) throws -> Params {
        let object = JSONValue.object(members)
        do {
            return try JSONValueDecoder().decode(Params.self, from: object)
        } catch let error as DecodingError {
            throw RPCError.invalidParams(detail(for: error, in: object))
        }
    }

    /// Decodes one bound member (what `bind(_:to:)` returned) into `type`, for code that takes each parameter
    /// as an argument of its own (typed interfaces) rather than a `Params` struct. An absent member is `nil` for
    /// an `Optional` type, else -32602 "missing parameter"; a `DecodingError` is -32602 with a detail naming
    /// the parameter, as `decode(_:from:)` gives.
    public static func decode<Value: Decodable>(
        _ type: Value.Type, member name: String, of members: [String: JSONValue]
    ) throws -> Value {
        try decode(type, member: name, value: members[name])
    }

    /// `decode(_:member:of:)` for a member already looked up (`BoundParams.value(named:)`): nil when absent.
    public static func decode<Value: Decodable>(_ type: Value.Type, member name: String, value: JSONValue?) throws -> Value {
        guard let value else {
            if let optional = Value.self as? any AbsentDecodable.Type { return optional.absent as! Value }
            throw RPCError.invalidParams("missing parameter '\(name)'")
        }
        // The common types without a decoder; their schemas were checked when they were bound.
        switch Value.self {
        case is Double.Type: if let number = value.doubleValue { return number as! Value }
        case is String.Type: if let text = value.stringValue { return text as! Value }
        case is JSONValue.Type: return value as! Value
        default: break
        }
        do {
            return try JSONValueDecoder().decode(Value.self, from: value)
        } catch let error as DecodingError {
            throw RPCError.invalidParams(detail(for: error.prefixed(by: MemberKey(name)), in: [name: value]))
        }
    }

    /// What is wrong with `value` under `schema` (the part `bind(_:to:)` enforces), or nil when it passes.
    public static func problem(with value: JSONValue, against schema: JSONValue) -> String? {
        CompiledSchema(schema).problem(with: value)
    }

    /// "missing parameter 'a'", "parameter 'a': expected a number, got a string", ...
    static func detail(for error: DecodingError, in value: JSONValue) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            if context.codingPath.isEmpty { return "missing parameter '\(key.stringValue)'" }
            return "parameter '\(pathText(context.codingPath))': missing member '\(key.stringValue)'"
        case .typeMismatch(let type, let context):
            let found = lookup(context.codingPath, in: value).map(kindPhrase) ?? "something else"
            return "\(subject(context.codingPath)): expected \(expectation(type)), got \(found)"
        case .valueNotFound(let type, let context):
            return "\(subject(context.codingPath)): expected \(expectation(type)), got null"
        case .dataCorrupted(let context):
            return "\(subject(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return String(describing: error)
        }
    }

    private static func subject(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "params" : "parameter '\(pathText(path))'"
    }

    /// `a`, `a.b`, `a[0].c`.
    static func pathText(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text
    }

    private static func lookup(_ path: [any CodingKey], in value: JSONValue) -> JSONValue? {
        var current = value
        for key in path {
            if case .array = current, let index = key.intValue {
                guard let element = current[index] else { return nil }
                current = element
            } else {
                guard let member = current[key.stringValue] else { return nil }
                current = member
            }
        }
        return current
    }

    private static func expectation(_ type: Any.Type) -> String {
        if type == String.self || type == Character.self { return "a string" }
        if type == Bool.self { return "a boolean" }
        if type is any BinaryInteger.Type { return "an integer" }
        if type is any BinaryFloatingPoint.Type { return "a number" }
        if type == [String: Any].self { return "an object" }
        if type == [Any].self { return "an array" }
        return "a value of type \(type)"
    }

    public static func kindPhrase(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// What a missing optional member decodes to.
protocol AbsentDecodable {
    static var absent: Self { get }
}

extension Optional: AbsentDecodable {
    static var absent: Self { nil }
}

private struct MemberKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension DecodingError {
    /// The same error, one level deeper: its coding path starts with `key`.
    fileprivate func prefixed(by key: any CodingKey) -> DecodingError {
        switch self {
        case .typeMismatch(let type, let context): .typeMismatch(type, context.prefixed(by: key))
        case .valueNotFound(let type, let context): .valueNotFound(type, context.prefixed(by: key))
        case .keyNotFound(let missing, let context): .keyNotFound(missing, context.prefixed(by: key))
        case .dataCorrupted(let context): .dataCorrupted(context.prefixed(by: key))
        @unknown default: self
        }
    }
}

extension DecodingError.Context {
    fileprivate func prefixed(by key: any CodingKey) -> DecodingError.Context {
        DecodingError.Context(
            codingPath: [key] + codingPath, debugDescription: debugDescription, underlyingError: underlyingError)
    }
}

/// Encodes results: `JSONValue` exactly as it is (inside other values too), anything else as `JSONEncoder` would
/// (`JSONValueEncoder`; keys sorted by their UTF-8 bytes). A value JSON cannot carry (a non-finite number)
/// throws an `EncodingError`, which reaches the client as -32603.
public enum ResultEncoding {
    /// The result of a method that returns nothing.
    public static let null: [UInt8] = Array("null".utf8)

    public static func encode<Output: Encodable>(_ result: Output) throws -> [UInt8] {
        // The common results skip the encoder, whose set-up costs more than the rest of a small call; they
        // come out exactly as it would write them.
        switch result {
        case let value as JSONValue: return try value.checkedSerialization()
        case let value as Double where value.isFinite:
            // A finite Double's text is a valid literal: no need for the check that serialization makes.
            if case .number(let text) = JSONValue.number(value) { return Array(text.utf8) }
        case let value as Double: return try JSONValue.number(value).checkedSerialization()  // throws
        case let value as Int: return Array(String(value).utf8)
        case let value as Bool: return Array((value ? "true" : "false").utf8)
        case let value as String: return JSONValue.string(value).serialized()
        default: break
        }
        return try JSONValueEncoder().encode(result).checkedSerialization()
    }
}
