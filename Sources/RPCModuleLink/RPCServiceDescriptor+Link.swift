package import NIOCore
import RPCBinding
package import RPCJSON
import RPCProtocol

/// A module's descriptor as the module host sends it to rpcd (`ModuleLinkMessage.ready`): rpcd keeps it for
/// routing, params binding, access rules, `rpc.discover` and fingerprints, without loading the module itself.
///
/// Reading is the exact inverse of writing: the reader takes what `linkJSON` writes and nothing else (every
/// key, no other, each with its type), so a descriptor rpcd accepts writes back to the JSON it read. A lenient
/// reader (unknown keys skipped, missing ones defaulted) would let a hostile host have rpcd serve something
/// other than what it declared. Strictness costs no compatibility: the module ABI is append-only (its structs
/// grow at the end, and `ModuleImage` reads an older module's field by field), but this JSON never crosses
/// versions, because `rpcd-module-host` and rpcd come from the same build (`ModuleHostExecutable`); a field
/// the ABI gains is added to the writer and the reader at once. The reader also holds the host to what a
/// module may declare, which `ModuleImage` checks in the host: names by `ServiceName` and `MemberName`, and no
/// flag beyond a module's (`.anyPeer` would bypass the access rules).
extension RPCServiceDescriptor {
    package var linkJSON: JSONValue {
        [
            "name": .string(name), "version": .string(version), "summary": .string(summary),
            "methods": .array(methods.map(\.linkJSON)), "events": .array(events.map(\.linkJSON)),
        ]
    }

    /// Reads a `ready` message's body, which a module host, running code rpcd does not trust, wrote.
    package init(linkBuffer buffer: ByteBuffer) throws(LinkDescriptorError) {
        guard let value = JSONValue(linkBuffer: buffer) else { throw LinkDescriptorError(path: "", problem: "not JSON") }
        try self.init(linkJSON: value)
    }

    /// Reads what `linkJSON` wrote; anything else is refused with the path of the first member that differs.
    package init(linkJSON value: JSONValue) throws(LinkDescriptorError) {
        let object = try LinkObject(value, at: "", keys: ["name", "version", "summary", "methods", "events"])
        self.init(
            name: try object.string("name", valid: ServiceName.isValid, rule: ServiceName.rule),
            version: try object.string("version"), summary: try object.string("summary"),
            methods: try object.array("methods", RPCMethodDescriptor.init(linkJSON:at:)),
            events: try object.array("events", RPCEventDescriptor.init(linkJSON:at:)))
    }
}

/// Why a `ready` message's body is not a descriptor: the member (`methods[0].params[1].optional`, empty for
/// the whole body) and what is wrong with it. Its text is what the supervisor logs when it kills the host.
package struct LinkDescriptorError: Error, Hashable, CustomStringConvertible {
    package var path: String
    package var problem: String

    package var description: String { path.isEmpty ? problem : "\(path): \(problem)" }
}

extension RPCMethodDescriptor {
    /// The flags a module can declare (`ModuleImage.flags`); `.anyPeer` is for rpcd's own methods.
    private static let moduleFlags: Flags = [.mayBlock, .readOnly, .byPosition, .anyParams]

    fileprivate var linkJSON: JSONValue {
        [
            "name": .string(name), "summary": .string(summary), "params": .array(params.map(\.linkJSON)),
            "result": result?.linkJSON ?? .null, "flags": .number(Int(flags.rawValue)),
            "errors": .array(errors.map { ["code": .number($0.code), "message": .string($0.message), "data": $0.data ?? .null] }),
        ]
    }

    fileprivate init(linkJSON value: JSONValue, at path: String) throws(LinkDescriptorError) {
        let object = try LinkObject(value, at: path, keys: ["name", "summary", "params", "result", "flags", "errors"])
        let bits = try object.integer("flags")
        guard let raw = UInt32(exactly: bits), Flags(rawValue: raw).isSubset(of: Self.moduleFlags) else {
            throw object.refusal("flags", "\(bits) has a bit no module may declare")
        }
        self.init(
            name: try object.string("name", valid: MemberName.isValid, rule: MemberName.rule),
            summary: try object.string("summary"), params: try object.array("params", RPCParam.init(linkJSON:at:)),
            result: try object.nullable("result", RPCParam.init(linkJSON:at:)),
            // The module's documented errors (rpcd_method.errors_json), for rpc.discover; `data: null` is none.
            errors: try object.array("errors") { value, path throws(LinkDescriptorError) in
                let error = try LinkObject(value, at: path, keys: ["code", "message", "data"])
                return RPCError(
                    code: try error.integer("code"), message: try error.string("message"),
                    data: try error.nullable("data") { value, _ in value })
            },
            flags: Flags(rawValue: raw))
    }
}

extension RPCEventDescriptor {
    fileprivate var linkJSON: JSONValue { ["name": .string(name), "summary": .string(summary), "schema": schema] }

    fileprivate init(linkJSON value: JSONValue, at path: String) throws(LinkDescriptorError) {
        let object = try LinkObject(value, at: path, keys: ["name", "summary", "schema"])
        self.init(
            name: try object.string("name", valid: MemberName.isValid, rule: MemberName.rule),
            summary: try object.string("summary"), schema: try object.value("schema"))
    }
}

extension RPCParam {
    fileprivate var linkJSON: JSONValue {
        ["name": .string(name), "schema": schema, "optional": .bool(optional), "summary": .string(summary)]
    }

    fileprivate init(linkJSON value: JSONValue, at path: String) throws(LinkDescriptorError) {
        let object = try LinkObject(value, at: path, keys: ["name", "schema", "optional", "summary"])
        self.init(
            try object.string("name", valid: MemberName.isValid, rule: MemberName.rule),
            schema: try object.value("schema"), optional: try object.bool("optional"), summary: try object.string("summary"))
    }
}

/// One object of a descriptor, read as `linkJSON` writes it: no key beyond `keys`, each read with its type.
/// A schema or an error's data is any JSON value, kept as it is.
private struct LinkObject {
    private let members: [String: JSONValue]
    private let path: String

    init(_ value: JSONValue, at path: String, keys: Set<String>) throws(LinkDescriptorError) {
        guard case .object(let members) = value else { throw LinkDescriptorError(path: path, problem: "not an object") }
        // The smallest, so that the refusal does not depend on the dictionary's order.
        if let unknown = members.keys.filter({ !keys.contains($0) }).min() {
            // The host's text, quoted as JSON and cut short: it goes to the log.
            let quoted = String(decoding: JSONValue.string(String(unknown.prefix(64))).serialized(), as: UTF8.self)
            throw LinkDescriptorError(path: path, problem: "unknown key \(quoted)")
        }
        self.members = members
        self.path = path
    }

    /// The path of member `key`.
    func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func refusal(_ key: String, _ problem: String) -> LinkDescriptorError {
        LinkDescriptorError(path: child(key), problem: problem)
    }

    func value(_ key: String) throws(LinkDescriptorError) -> JSONValue {
        guard let value = members[key] else { throw refusal(key, "missing") }
        return value
    }

    func string(_ key: String) throws(LinkDescriptorError) -> String {
        guard case .string(let text) = try value(key) else { throw refusal(key, "not a string") }
        return text
    }

    /// A name, which must follow `rule`.
    func string(_ key: String, valid: (String) -> Bool, rule: String) throws(LinkDescriptorError) -> String {
        let text = try string(key)
        guard valid(text) else { throw refusal(key, "not \(rule)") }
        return text
    }

    func bool(_ key: String) throws(LinkDescriptorError) -> Bool {
        guard case .bool(let flag) = try value(key) else { throw refusal(key, "not a boolean") }
        return flag
    }

    /// An integer as `JSONValue.number(Int)` writes it: `1.0` or `1e0` would read as 1 and write back as `1`.
    func integer(_ key: String) throws(LinkDescriptorError) -> Int {
        let value = try self.value(key)
        guard let integer = value.intValue, value == .number(integer) else { throw refusal(key, "not an integer") }
        return integer
    }

    func array<Element>(
        _ key: String, _ read: (JSONValue, String) throws(LinkDescriptorError) -> Element
    ) throws(LinkDescriptorError) -> [Element] {
        guard case .array(let elements) = try value(key) else { throw refusal(key, "not an array") }
        var result: [Element] = []
        for (index, element) in elements.enumerated() {
            result.append(try read(element, "\(child(key))[\(index)]"))
        }
        return result
    }

    /// `null` for nil, else the value `read` makes of it.
    func nullable<Wrapped>(
        _ key: String, _ read: (JSONValue, String) throws(LinkDescriptorError) -> Wrapped
    ) throws(LinkDescriptorError) -> Wrapped? {
        let value = try self.value(key)
        return value == .null ? nil : try read(value, child(key))
    }
}

extension JSONValue {
    /// The value as a buffer, for a link message.
    package var linkBuffer: ByteBuffer { ByteBuffer(bytes: serialized()) }

    /// A link message's JSON body; nil when it is not JSON.
    package init?(linkBuffer buffer: ByteBuffer) {
        guard let value = try? buffer.withUnsafeReadableBytes({ bytes throws(JSONSyntaxError) in try JSONValue(parsing: bytes) }) else {
            return nil
        }
        self = value
    }
}
