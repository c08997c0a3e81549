public import RPCJSON

/// One parameter of a method (or its result), in positional order: the name used by by-name calls and
/// `rpc.discover`, a JSON Schema, whether it may be left out, and a summary. The same type describes the
/// parameters of the daemon's built-in services and of modules (an OpenRPC content descriptor).
///
/// For typed methods `ParamsBinding` also enforces a small part of the schema before decoding: `type` (a name
/// or an array of names, "integer" meaning a number without a fraction), `minimum`, `maximum` and `enum`.
/// Other keywords are documentation only.
public struct RPCParam: Sendable, Hashable {
    /// An identifier: letters, digits and '_'.
    public var name: String
    /// A JSON Schema; `[:]` accepts any value.
    public var schema: JSONValue
    /// Whether a call may leave it out (decode it into an `Optional` property).
    public var optional: Bool
    public var summary: String

    public init(_ name: String, schema: JSONValue = [:], optional: Bool = false, summary: String = "") {
        self.name = name
        self.schema = schema
        self.optional = optional
        self.summary = summary
    }

    /// Whether a call must give it (what OpenRPC calls `required`).
    public var required: Bool { !optional }

    /// Any JSON number.
    public static func number(_ name: String, optional: Bool = false, summary: String = "") -> RPCParam {
        RPCParam(name, schema: ["type": "number"], optional: optional, summary: summary)
    }

    /// A number without a fraction, optionally bounded (inclusive).
    public static func integer(
        _ name: String, minimum: Int? = nil, maximum: Int? = nil, optional: Bool = false, summary: String = ""
    ) -> RPCParam {
        var schema: [String: JSONValue] = ["type": "integer"]
        if let minimum { schema["minimum"] = .number(minimum) }
        if let maximum { schema["maximum"] = .number(maximum) }
        return RPCParam(name, schema: .object(schema), optional: optional, summary: summary)
    }

    public static func string(_ name: String, optional: Bool = false, summary: String = "") -> RPCParam {
        RPCParam(name, schema: ["type": "string"], optional: optional, summary: summary)
    }

    public static func boolean(_ name: String, optional: Bool = false, summary: String = "") -> RPCParam {
        RPCParam(name, schema: ["type": "boolean"], optional: optional, summary: summary)
    }

    /// An array, with `items` as the schema of its elements when given.
    public static func array(
        _ name: String, items: JSONValue? = nil, optional: Bool = false, summary: String = ""
    ) -> RPCParam {
        var schema: [String: JSONValue] = ["type": "array"]
        if let items { schema["items"] = items }
        return RPCParam(name, schema: .object(schema), optional: optional, summary: summary)
    }

    public static func object(_ name: String, optional: Bool = false, summary: String = "") -> RPCParam {
        RPCParam(name, schema: ["type": "object"], optional: optional, summary: summary)
    }

    /// Any JSON value, `null` included.
    public static func any(_ name: String, optional: Bool = false, summary: String = "") -> RPCParam {
        RPCParam(name, schema: [:], optional: optional, summary: summary)
    }
}
