import NIOCore
import RPCBinding
import RPCJSON
import RPCProtocol

/// A module's descriptor as the module host sends it to rpcd (`ModuleLinkMessage.ready`): rpcd keeps it for
/// routing, params binding, access rules, `rpc.discover` and fingerprints, without loading the module itself.
extension RPCServiceDescriptor {
    package var linkJSON: JSONValue {
        [
            "name": .string(name), "version": .string(version), "summary": .string(summary),
            "methods": .array(methods.map { method in
                [
                    "name": .string(method.name), "summary": .string(method.summary),
                    "params": .array(method.params.map(\.linkJSON)), "result": method.result?.linkJSON ?? .null,
                    "flags": .number(Int(method.flags.rawValue)),
                    "errors": .array(method.errors.map { error in
                        ["code": .number(error.code), "message": .string(error.message), "data": error.data ?? .null]
                    }),
                ]
            }),
            "events": .array(events.map { ["name": .string($0.name), "summary": .string($0.summary), "schema": $0.schema] }),
        ]
    }

    /// Reads what `linkJSON` wrote; nil for anything else (a broken host).
    package init?(linkJSON value: JSONValue) {
        guard let name = value["name"]?.stringValue, let version = value["version"]?.stringValue,
              let summary = value["summary"]?.stringValue, let methodValues = value["methods"]?.arrayValue,
              let eventValues = value["events"]?.arrayValue else { return nil }
        var methods: [RPCMethodDescriptor] = []
        for method in methodValues {
            guard let methodName = method["name"]?.stringValue, let params = method["params"]?.arrayValue,
                  let flags = method["flags"]?.intValue else { return nil }
            var bound: [RPCParam] = []
            for param in params {
                guard let param = RPCParam(linkJSON: param) else { return nil }
                bound.append(param)
            }
            let result = method["result"].flatMap { $0 == .null ? nil : RPCParam(linkJSON: $0) }
            // The module's documented errors (rpcd_method.errors_json), for rpc.discover.
            let errors = (method["errors"]?.arrayValue ?? []).compactMap { error -> RPCError? in
                guard let code = error["code"]?.intValue, let message = error["message"]?.stringValue else { return nil }
                return RPCError(code: code, message: message, data: error["data"].flatMap { $0 == .null ? nil : $0 })
            }
            methods.append(RPCMethodDescriptor(
                name: methodName, summary: method["summary"]?.stringValue ?? "", params: bound, result: result,
                errors: errors, flags: RPCMethodDescriptor.Flags(rawValue: UInt32(truncatingIfNeeded: flags))))
        }
        var events: [RPCEventDescriptor] = []
        for event in eventValues {
            guard let eventName = event["name"]?.stringValue else { return nil }
            events.append(RPCEventDescriptor(
                name: eventName, summary: event["summary"]?.stringValue ?? "", schema: event["schema"] ?? [:]))
        }
        self.init(name: name, version: version, summary: summary, methods: methods, events: events)
    }
}

extension RPCParam {
    fileprivate var linkJSON: JSONValue {
        ["name": .string(name), "schema": schema, "optional": .bool(optional), "summary": .string(summary)]
    }

    fileprivate init?(linkJSON value: JSONValue) {
        guard let name = value["name"]?.stringValue else { return nil }
        self.init(
            name, schema: value["schema"] ?? [:], optional: value["optional"]?.boolValue ?? false,
            summary: value["summary"]?.stringValue ?? "")
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
