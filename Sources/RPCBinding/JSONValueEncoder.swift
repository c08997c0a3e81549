package import RPCJSON

/// Encodes `Encodable` values into a `JSONValue`: what `JSONEncoder` with its default strategies writes, without
/// Foundation.
///
/// RPCBinding is linked into rpcd, into every module host process and into every Swift module (through the SDK);
/// importing Foundation here for `JSONEncoder` alone mapped and relocated libFoundationEssentials (10 MB) in each
/// of them: 2 MiB of a module host's idle RSS (issue 20). The output is `JSONEncoder`'s, byte for byte, once
/// serialized with sorted keys (checked against it in ParamsBindingTests): integers as written, `Double` as
/// `JSONValue.number` writes it, `Float` as its shortest text, a non-finite number throws; and, recognised by
/// name so that Foundation need not be imported, `Data` as Base64, `Decimal` as a number, `URL` as its string
/// (`Date` encodes itself as seconds since 2001, `JSONEncoder`'s default too). A value that encodes nothing is
/// `{}` inside another and an error at the top, as with `JSONEncoder`.
package struct JSONValueEncoder {
    package init() {}

    package func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        let slot = Slot()
        try slot.encode(value, codingPath: [])
        guard let json = slot.json else {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        return json
    }
}

/// One value being encoded; containers hold slots, so that a nested container or a super-encoder can still
/// fill its member after the parent moved on.
private final class Slot {
    enum Content {
        case empty
        case value(JSONValue)
        case array([Slot])
        case object([String: Slot])
    }

    var content = Content.empty

    /// The value, or nil if nothing was encoded into it.
    var json: JSONValue? {
        switch content {
        case .empty: nil
        case .value(let value): value
        case .array(let slots): .array(slots.map { $0.json ?? .object([:]) })
        case .object(let slots): .object(slots.mapValues { $0.json ?? .object([:]) })
        }
    }

    func encode<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        switch value {
        case let json as JSONValue:
            // Exact pass-through, as `JSONValueDecoder` does for the other direction.
            content = .value(json)
        case let number as Double:
            content = .value(try Self.number(number, codingPath: codingPath))
        case let number as Float:
            content = .value(try Self.number(number, codingPath: codingPath))
        // The common members, before the look at the type's name that the rest takes.
        case let text as String:
            content = .value(.string(text))
        case let number as Int:
            content = .value(.number(number))
        case let flag as Bool:
            content = .value(.bool(flag))
        default:
            try encodeFoundationValue(value, codingPath: codingPath)
        }
    }

    static func number(_ value: Double, codingPath: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else { throw nonFinite(value, codingPath: codingPath) }
        return .number(value)
    }

    static func number(_ value: Float, codingPath: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else { throw nonFinite(value, codingPath: codingPath) }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return .number(text)
    }

    private static func nonFinite(_ value: some Encodable, codingPath: [any CodingKey]) -> EncodingError {
        EncodingError.invalidValue(
            value, EncodingError.Context(codingPath: codingPath, debugDescription: "Unable to encode \(value) directly in JSON."))
    }

    /// `JSONEncoder`'s special cases for Foundation's types, recognised by their names; anything else encodes itself.
    private func encodeFoundationValue<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        let name = String(reflecting: T.self)
        let foundationType = name.hasPrefix("Foundation.") || name.hasPrefix("FoundationEssentials.")
            ? name[name.index(after: name.firstIndex(of: ".")!)...] : ""
        switch foundationType {
        case "Decimal":
            content = .value(.number(String(describing: value)))
        case "Data":
            // Data encodes itself as an array of bytes; JSONEncoder writes Base64.
            try value.encode(to: ValueEncoder(slot: self, codingPath: codingPath))
            let bytes = (json?.arrayValue ?? []).compactMap { $0.intValue.flatMap(UInt8.init(exactly:)) }
            content = .value(.string(Base64.encode(bytes)))
        case "URL":
            // URL encodes itself as {"relative": ..., "base": ...}; JSONEncoder writes its absolute string, which
            // only Foundation can resolve when there is a base.
            try value.encode(to: ValueEncoder(slot: self, codingPath: codingPath))
            guard case .object(let members) = json ?? .null, let relative = members["relative"]?.stringValue,
                  members["base"] == nil || members["base"] == .null else {
                throw EncodingError.invalidValue(
                    value, EncodingError.Context(
                        codingPath: codingPath, debugDescription: "A URL relative to a base URL: return its absoluteURL."))
            }
            content = .value(.string(relative))
        default:
            try value.encode(to: ValueEncoder(slot: self, codingPath: codingPath))
        }
    }

    func object() {
        if case .object = content { return }
        content = .object([:])
    }

    func array() {
        if case .array = content { return }
        content = .array([])
    }

    /// A new member of this object, replacing one of the same key (`JSONEncoder` keeps the last too).
    func member(_ key: String) -> Slot {
        let slot = Slot()
        if case .object(var members) = content {
            content = .empty
            members[key] = slot
            content = .object(members)
        }
        return slot
    }

    func append() -> Slot {
        let slot = Slot()
        if case .array(var elements) = content {
            content = .empty
            elements.append(slot)
            content = .array(elements)
        }
        return slot
    }

    var count: Int {
        if case .array(let elements) = content { elements.count } else { 0 }
    }
}

private struct ValueEncoder: Encoder {
    let slot: Slot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        slot.object()
        return KeyedEncodingContainer(KeyedContainer<Key>(slot: slot, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        slot.array()
        return UnkeyedContainer(slot: slot, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(slot: slot, codingPath: codingPath)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let slot: Slot
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {
        slot.member(key.stringValue).content = .value(.null)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try slot.member(key.stringValue).encode(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        ValueEncoder(slot: slot.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        ValueEncoder(slot: slot.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        ValueEncoder(slot: slot.member("super"), codingPath: codingPath + [TextKey("super")])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ValueEncoder(slot: slot.member(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]
    var count: Int { slot.count }

    private var nextKey: any CodingKey { TextKey(index: count) }

    mutating func encodeNil() throws {
        slot.append().content = .value(.null)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = nextKey
        try slot.append().encode(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = nextKey
        return ValueEncoder(slot: slot.append(), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = nextKey
        return ValueEncoder(slot: slot.append(), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let key = nextKey
        return ValueEncoder(slot: slot.append(), codingPath: codingPath + [key])
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { slot.content = .value(.null) }
    mutating func encode(_ value: Bool) throws { slot.content = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { slot.content = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { slot.content = .value(try Slot.number(value, codingPath: codingPath)) }
    mutating func encode(_ value: Float) throws { slot.content = .value(try Slot.number(value, codingPath: codingPath)) }
    mutating func encode(_ value: Int) throws { integer(value) }
    mutating func encode(_ value: Int8) throws { integer(value) }
    mutating func encode(_ value: Int16) throws { integer(value) }
    mutating func encode(_ value: Int32) throws { integer(value) }
    mutating func encode(_ value: Int64) throws { integer(value) }
    mutating func encode(_ value: UInt) throws { integer(value) }
    mutating func encode(_ value: UInt8) throws { integer(value) }
    mutating func encode(_ value: UInt16) throws { integer(value) }
    mutating func encode(_ value: UInt32) throws { integer(value) }
    mutating func encode(_ value: UInt64) throws { integer(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try slot.encode(value, codingPath: codingPath)
    }

    private func integer(_ value: some FixedWidthInteger) {
        slot.content = .value(.number(String(value)))
    }
}

/// A key made of text (`super`) or an array index, for coding paths in errors.
private struct TextKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ text: String) {
        stringValue = text
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}

/// RFC 4648 Base64 with padding, as `Data.base64EncodedString()` writes it.
private enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let first = bytes[index]
            let second = remaining > 1 ? bytes[index + 1] : 0
            let third = remaining > 2 ? bytes[index + 2] : 0
            output.append(alphabet[Int(first >> 2)])
            output.append(alphabet[Int((first & 0x03) << 4 | second >> 4)])
            output.append(remaining > 1 ? alphabet[Int((second & 0x0f) << 2 | third >> 6)] : UInt8(ascii: "="))
            output.append(remaining > 2 ? alphabet[Int(third & 0x3f)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}
