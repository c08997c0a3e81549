/// One JSON value as text, handed through without being decoded: the params of a `rawJSON` method exactly as
/// the client sent them, and what such a method returns. For methods that pass data along (an echo, a
/// store that keeps documents as they are), this skips building a `JSONValue` tree and writing it back.
public struct RPCRawJSON: Sendable, Hashable {
    /// UTF-8 JSON text of exactly one value.
    public let bytes: [UInt8]

    /// Bytes rpcd has already checked (a call's params are validated with the whole frame).
    init(trusted bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// `bytes` if they hold exactly one JSON value; throws the syntax error otherwise.
    public init(validating bytes: [UInt8]) throws {
        _ = try JSONValue(parsing: bytes)
        self.bytes = bytes
    }

    /// The JSON text of `value`; a number JSON cannot represent (NaN, infinity) throws.
    public init(_ value: JSONValue) throws {
        self.bytes = try value.checkedSerialization()
    }

    /// `null`, what a call without params has.
    public static let null = RPCRawJSON(trusted: Array("null".utf8))

    /// The value as a tree (parsing it: the slow path this type exists to avoid).
    public func value() throws -> JSONValue {
        try JSONValue(parsing: bytes)
    }
}
