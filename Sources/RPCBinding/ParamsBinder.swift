public import RPCJSON
public import RPCProtocol

/// `ParamsBinding`'s rules for one method's declared parameters, prepared once: each schema is read into a
/// `CompiledSchema` when the method is made, so a call checks its arguments without looking keywords up in
/// the schema's dictionary, and binds them by position of declaration without building a dictionary of its
/// own. Methods keep one binder for all their calls; `ParamsBinding.bind(_:to:)` makes one per call.
public struct ParamsBinder: Sendable {
    public let declared: [RPCParam]
    private let schemas: [CompiledSchema]

    public init(_ declared: [RPCParam]) {
        self.declared = declared
        self.schemas = declared.map { CompiledSchema($0.schema) }
    }

    /// `params` (as sent; `.null` when absent) bound to the declared parameters and checked against their
    /// schemas, with the rules and errors `ParamsBinding` documents.
    public func bind(_ params: JSONValue) throws(RPCError) -> BoundParams {
        var values = [JSONValue?](repeating: nil, count: declared.count)
        switch params {
        case .null:
            break
        case .array(let elements):
            try checkCount(elements.count)
            for (position, element) in elements.enumerated() { values[position] = element }
        case .object(let given):
            var unknown: String?
            for (name, value) in given { place(value, named: name, in: &values, unknown: &unknown) }
            if let unknown { throw .invalidParams("unknown parameter '\(unknown)'") }
        default:
            throw .invalidParams("params must be an array or an object, not \(ParamsBinding.kindPhrase(params))")
        }
        return try checked(values)
    }

    /// `bind(_:)` for params still as JSON text (empty when absent), read member by member into place: the
    /// params object is never built. Text that is not JSON is -32602 "params are not valid JSON".
    public func bind(text: UnsafeRawBufferPointer) throws -> BoundParams {
        guard !JSONScanner.isBlank(text) else { return try bind(.null) }
        var values = [JSONValue?](repeating: nil, count: declared.count)
        var unknown: String?
        var elements = 0
        let topLevel: JSONTopLevel
        do {
            topLevel = try JSONValue.visitTopLevel(text) { name, value in
                if let name {
                    place(value, named: name, in: &values, unknown: &unknown)
                } else {
                    if elements < values.count { values[elements] = value }
                    elements += 1
                }
            }
        } catch let error as JSONSyntaxError {
            throw RPCError.invalidParams("params are not valid JSON: \(error)")
        }
        switch topLevel {
        case .object:
            if let unknown { throw RPCError.invalidParams("unknown parameter '\(unknown)'") }
        case .array:
            try checkCount(elements)
        case .scalar(let value):
            return try bind(value)
        }
        return try checked(values)
    }

    /// Whether params text is absent or an empty array or object (`[]`, `{}`, with any whitespace): what binds
    /// to no parameters, recognised without building anything.
    public static func isEmpty(_ text: UnsafeRawBufferPointer) -> Bool {
        var scanner = JSONScanner(bytes: text, maxDepth: 1)
        let close: UInt8
        switch scanner.peekNonWhitespace() {
        case nil: return true
        case UInt8(ascii: "{"): close = UInt8(ascii: "}")
        case UInt8(ascii: "["): close = UInt8(ascii: "]")
        default: return false
        }
        scanner.offset += 1
        return scanner.consume(close) && scanner.peekNonWhitespace() == nil
    }

    /// -32602 unless params text is absent or an empty array or object: binding to no parameters, without
    /// building anything for what clients send to methods without parameters.
    public static func requireNone(_ text: UnsafeRawBufferPointer) throws {
        guard !isEmpty(text) else { return }
        _ = try ParamsBinder([]).bind(text: text)
    }

    /// A member of a params object into its parameter's place. Of several names that are not declared, the
    /// first in sorted order is reported, whatever order the object's members come in.
    private func place(_ value: JSONValue, named name: String, in values: inout [JSONValue?], unknown: inout String?) {
        // A method has a handful of parameters: comparing names costs less than hashing one.
        if let position = declared.firstIndex(where: { $0.name == name }) {
            values[position] = value
        } else if unknown.map({ name < $0 }) ?? true {
            unknown = name
        }
    }

    private func checkCount(_ count: Int) throws(RPCError) {
        guard count <= declared.count else {
            if declared.isEmpty { throw .invalidParams("this method takes no parameters") }
            throw .invalidParams("too many parameters: expected at most \(declared.count), got \(count)")
        }
    }

    /// Absent and `null` optional parameters taken out, required ones insisted on, schemas checked.
    private func checked(_ values: [JSONValue?]) throws(RPCError) -> BoundParams {
        var values = values
        for (position, param) in declared.enumerated() {
            let value = values[position]
            if value == nil || (param.optional && value == .null) {
                guard param.optional else { throw .invalidParams("missing parameter '\(param.name)'") }
                values[position] = nil
            } else if let value, let problem = schemas[position].problem(with: value) {
                throw .invalidParams("parameter '\(param.name)': \(problem)")
            }
        }
        return BoundParams(declared: declared, values: values)
    }
}

/// A call's params, bound: the value of each declared parameter, nil when absent (an absent or `null` optional
/// one).
public struct BoundParams: Sendable {
    public let declared: [RPCParam]
    /// In the order of `declared`.
    public let values: [JSONValue?]

    /// The value of the parameter `name`; nil when it is absent or not declared.
    public func value(named name: String) -> JSONValue? {
        // A method has a handful of parameters: comparing names costs less than hashing one.
        guard let position = declared.firstIndex(where: { $0.name == name }) else { return nil }
        return values[position]
    }

    /// The present parameters by name, as `ParamsBinding.bind(_:to:)` returns them.
    public var members: [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for (param, value) in zip(declared, values) { members[param.name] = value }
        return members
    }
}

/// The part of JSON Schema `ParamsBinding` enforces — `type`, `enum`, `minimum` and `maximum` at the top level —
/// read out of a schema once.
struct CompiledSchema: Sendable {
    /// The `type` names, in the order written; empty when the schema sets none (or is not an object).
    private let types: [String]
    private let kinds: [TypeName]
    private let options: [JSONValue]?
    private let minimum: (text: JSONValue, bound: Double)?
    private let maximum: (text: JSONValue, bound: Double)?

    init(_ schema: JSONValue) {
        guard case .object(let keywords) = schema else {
            (types, kinds, options, minimum, maximum) = ([], [], nil, nil, nil)
            return
        }
        let type = keywords["type"]
        types = type?.stringValue.map { [$0] } ?? type?.arrayValue?.compactMap(\.stringValue) ?? []
        kinds = types.map(TypeName.init)
        options = keywords["enum"]?.arrayValue
        minimum = keywords["minimum"].flatMap { text in text.doubleValue.map { (text, $0) } }
        maximum = keywords["maximum"].flatMap { text in text.doubleValue.map { (text, $0) } }
    }

    /// What is wrong with `value`, or nil when it passes.
    func problem(with value: JSONValue) -> String? {
        if !kinds.isEmpty && !kinds.contains(where: { $0.matches(value) }) {
            let wanted = types.map(Self.typePhrase).joined(separator: " or ")
            return "expected \(wanted), got \(ParamsBinding.kindPhrase(value))"
        }
        if let options, !options.contains(where: { Self.equal($0, value) }) {
            return "must be one of \(JSONValue.array(options).jsonText)"
        }
        if minimum != nil || maximum != nil, let number = value.doubleValue {
            if let minimum, number < minimum.bound { return "must be at least \(minimum.text.jsonText)" }
            if let maximum, number > maximum.bound { return "must be at most \(maximum.text.jsonText)" }
        }
        return nil
    }

    /// A JSON Schema type name.
    private enum TypeName {
        case null, boolean, number, integer, string, array, object
        /// A name this check does not know: any value matches it (left to the module).
        case other

        init(_ name: String) {
            switch name {
            case "null": self = .null
            case "boolean": self = .boolean
            case "number": self = .number
            case "integer": self = .integer
            case "string": self = .string
            case "array": self = .array
            case "object": self = .object
            default: self = .other
            }
        }

        func matches(_ value: JSONValue) -> Bool {
            switch (self, value) {
            case (.other, _), (.null, .null), (.boolean, .bool), (.number, .number), (.string, .string),
                (.array, .array), (.object, .object):
                return true
            case (.integer, .number(let text)):
                if value.intValue != nil { return true }
                guard let number = Double(text), number.isFinite else { return false }
                return number.rounded(.towardZero) == number
            default:
                return false
            }
        }
    }

    private static func typePhrase(_ type: String) -> String {
        switch type {
        case "integer": "an integer"
        case "number": "a number"
        case "string": "a string"
        case "boolean": "a boolean"
        case "array": "an array"
        case "object": "an object"
        case "null": "null"
        default: type
        }
    }

    /// Structural equality, with numbers compared by value (`1` equals `1.0`).
    private static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool {
        if let x = a.doubleValue, let y = b.doubleValue { return x == y }
        return a == b
    }
}
