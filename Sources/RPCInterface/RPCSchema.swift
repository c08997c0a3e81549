/// A Swift type that says which JSON Schema its JSON form has. The standard scalar types, arrays, string-keyed
/// dictionaries, `Optional` and `JSONValue` conform; give a `Codable` type of your own a schema by conforming
/// it (without one, a parameter of that type is described as accepting any value, `{}`).
///
/// The schema of a parameter is also checked when a call is bound (`type`, `minimum`, `maximum`, `enum`:
/// `ParamsBinding`), so it should describe the type's JSON form exactly.
public protocol RPCSchemaDescribing {
    static var rpcSchema: JSONValue { get }
}

/// Schemas and parameter descriptions from Swift types: what `@RPCInterface` writes for each parameter and
/// result.
public enum RPCSchema {
    /// The schema of `type`'s JSON form: `{}` (any value) for a type that does not describe itself.
    public static func of<Value>(_ type: Value.Type) -> JSONValue {
        (Value.self as? any RPCSchemaDescribing.Type)?.rpcSchema ?? [:]
    }

    /// A parameter (or result) named `name` of type `type`: optional exactly when `type` is an `Optional`.
    public static func param<Value>(_ name: String, _ type: Value.Type, summary: String = "") -> RPCParam {
        RPCParam(name, schema: of(type), optional: Value.self is any OptionalValue.Type, summary: summary)
    }
}

/// `Optional`, recognised at run time (a parameter of optional type may be left out).
protocol OptionalValue {}
extension Optional: OptionalValue {}

extension Optional: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { RPCSchema.of(Wrapped.self) }
}

extension JSONValue: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { [:] }
}

extension String: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "string"] }
}

extension Bool: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "boolean"] }
}

extension Double: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "number"] }
}

extension Float: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "number"] }
}

extension Int: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "integer"] }
}

extension Int64: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "integer"] }
}

extension Int32: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue {
        ["type": "integer", "minimum": .number(Int(Int32.min)), "maximum": .number(Int(Int32.max))]
    }
}

extension UInt: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "integer", "minimum": 0] }
}

extension UInt64: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "integer", "minimum": 0] }
}

extension UInt32: RPCSchemaDescribing {
    public static var rpcSchema: JSONValue { ["type": "integer", "minimum": 0, "maximum": .number(Int(UInt32.max))] }
}

extension Array: RPCSchemaDescribing {
    /// `{"type": "array"}`, with `items` when the element type has a schema.
    public static var rpcSchema: JSONValue {
        let items = RPCSchema.of(Element.self)
        return items == [:] ? ["type": "array"] : ["type": "array", "items": items]
    }
}

extension Dictionary: RPCSchemaDescribing where Key == String {
    /// `{"type": "object"}`, with `additionalProperties` when the value type has a schema.
    public static var rpcSchema: JSONValue {
        let values = RPCSchema.of(Value.self)
        return values == [:] ? ["type": "object"] : ["type": "object", "additionalProperties": values]
    }
}
