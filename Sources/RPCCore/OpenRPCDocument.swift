package import RPCBinding
package import RPCJSON
import RPCProtocol

/// Builds the OpenRPC 1.3 document that `rpc.discover` returns: one method entry per routed method, with
/// params, result and documented errors as content descriptors (a method that declares no params yet takes
/// some has `x-rpcd-params`, the JSON Schema of its whole params value), plus rpcd's own `x-rpcd-services` list
/// (name, version, summary, fingerprint of each service) and `x-events` (OpenRPC has no events: each
/// subscribable event's full name, summary and payload schema).
package enum OpenRPCDocument {
    package static let openRPCVersion = "1.3.2"

    /// `shows` picks the methods to list (those the caller may call), `showsEvents` the services whose events
    /// to list (those the caller may subscribe to); a service none of whose methods or events it shows is left
    /// out. Fingerprints are always those of the whole service.
    package static func make(
        for allServices: [RPCServiceDescriptor],
        shows: (RPCServiceDescriptor, RPCMethodDescriptor) -> Bool = { _, _ in true },
        showsEvents: (RPCServiceDescriptor) -> Bool = { _ in true }
    ) -> JSONValue {
        var methods: [JSONValue] = []
        var events: [JSONValue] = []
        var services: [RPCServiceDescriptor] = []
        for service in allServices {
            let shown = service.methods.filter { shows(service, $0) }
            let shownEvents = service.events.isEmpty || !showsEvents(service) ? [] : service.events
            if !shown.isEmpty || !shownEvents.isEmpty { services.append(service) }
            for event in shownEvents {
                var entry: [String: JSONValue] = ["name": .string(service.name + "." + event.name), "schema": event.schema]
                if !event.summary.isEmpty { entry["summary"] = .string(event.summary) }
                events.append(.object(entry))
            }
            for method in shown {
                var entry: [String: JSONValue] = [
                    "name": .string(service.name + "." + method.name),
                    "params": .array(method.params.map(contentDescriptor)),
                    "paramStructure": .string(method.flags.contains(.byPosition) ? "by-position" : "either"),
                ]
                if !method.summary.isEmpty { entry["summary"] = .string(method.summary) }
                if let result = method.result { entry["result"] = contentDescriptor(result) }
                if !method.errors.isEmpty {
                    entry["errors"] = .array(method.errors.map { error -> JSONValue in ["code": .number(error.code), "message": .string(error.message)] })
                }
                // OpenRPC has no way to say "any params" or "a list of any length": `params: []` alone reads as
                // "takes none". The JSON Schema of the whole params value says it (`echo.echo`, `calc.sum`).
                if method.params.isEmpty {
                    if method.flags.contains(.byPosition) {
                        entry["x-rpcd-params"] = ["type": "array"]
                    } else if method.flags.contains(.anyParams) {
                        entry["x-rpcd-params"] = [:]
                    }
                }
                if method.flags.contains(.mayBlock) { entry["x-rpcd-may-block"] = true }
                if method.flags.contains(.readOnly) { entry["x-rpcd-read-only"] = true }
                methods.append(.object(entry))
            }
        }
        let serviceList: [JSONValue] = services.map {
            [
                "name": .string($0.name), "version": .string($0.version), "summary": .string($0.summary),
                "fingerprint": .string($0.fingerprint),
            ]
        }
        return [
            "openrpc": .string(openRPCVersion),
            "info": [
                "title": "rpcd", "version": .string(RPCDaemonVersion.version),
                "x-rpcd-protocol": .number(RPCDaemonVersion.protocolVersion),
            ],
            "methods": .array(methods),
            "x-events": .array(events),
            "x-rpcd-services": .array(serviceList),
        ]
    }

    private static func contentDescriptor(_ parameter: RPCParam) -> JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(parameter.name), "schema": parameter.schema, "required": .bool(parameter.required),
        ]
        if !parameter.summary.isEmpty { object["summary"] = .string(parameter.summary) }
        return .object(object)
    }
}
