import ArgumentParser
import RPCClient
import RPCJSON

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List services and their methods (rpc.discover).",
        discussion: """
            Each service is a header "NAME VERSION (fingerprint F) — SUMMARY" followed by its methods as \
            signatures, e.g. "calc.add(a: number, b: number) -> number", then its events ("event \
            kv.changed: object"). Optional params end in "?". With --json: an array of {name, version, summary, \
            fingerprint, methods, events} where methods are the OpenRPC method objects and events the x-events \
            entries.
            """)

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let timeout = options.timeoutDuration
        let document = try await options.withClient(method: "rpc.discover") { client throws(RPCClientError) in
            try await client.call("rpc.discover", timeout: timeout)
        }
        let services = ServiceListing.services(in: document)
        if options.json {
            Terminal.printJSON(.array(services.map(\.json)))
        } else {
            print(ServiceListing.render(services), terminator: "")
        }
    }
}

/// One service of an `rpc.discover` document, with its methods.
struct ServiceListing: Equatable {
    var name: String
    var version: String?
    var summary: String?
    var fingerprint: String?
    var methods: [JSONValue]
    var events: [JSONValue] = []

    var json: JSONValue {
        var object: [String: JSONValue] = ["name": .string(name), "methods": .array(methods), "events": .array(events)]
        object["version"] = version.map(JSONValue.string) ?? .null
        object["summary"] = summary.map(JSONValue.string) ?? .null
        object["fingerprint"] = fingerprint.map(JSONValue.string) ?? .null
        return .object(object)
    }

    /// Services in the order of `x-rpcd-services`, then any other method prefixes alphabetically; methods sorted.
    static func services(in document: JSONValue) -> [ServiceListing] {
        var byName: [String: ServiceListing] = [:]
        var order: [String] = []
        for service in document["x-rpcd-services"]?.arrayValue ?? [] {
            guard let name = service["name"]?.stringValue, byName[name] == nil else { continue }
            byName[name] = ServiceListing(
                name: name, version: service["version"]?.stringValue, summary: service["summary"]?.stringValue,
                fingerprint: service["fingerprint"]?.stringValue, methods: [])
            order.append(name)
        }
        var others: [String] = []
        for method in document["methods"]?.arrayValue ?? [] {
            guard let name = method["name"]?.stringValue else { continue }
            let service = String(name.prefix { $0 != "." })
            if byName[service] == nil {
                byName[service] = ServiceListing(name: service, methods: [])
                others.append(service)
            }
            byName[service]!.methods.append(method)
        }
        for event in document["x-events"]?.arrayValue ?? [] {
            guard let name = event["name"]?.stringValue else { continue }
            let service = String(name.prefix { $0 != "." })
            if byName[service] == nil {
                byName[service] = ServiceListing(name: service, methods: [])
                others.append(service)
            }
            byName[service]!.events.append(event)
        }
        return (order + others.sorted()).map { name in
            var listing = byName[name]!
            listing.methods.sort { ($0["name"]?.stringValue ?? "") < ($1["name"]?.stringValue ?? "") }
            return listing
        }
    }

    static func render(_ services: [ServiceListing]) -> String {
        var text = ""
        for (index, service) in services.enumerated() {
            if index > 0 { text += "\n" }
            var header = service.name
            if let version = service.version { header += " \(version)" }
            if let fingerprint = service.fingerprint { header += " (fingerprint \(fingerprint))" }
            if let summary = service.summary, !summary.isEmpty { header += " — \(summary)" }
            text += header + "\n"
            if service.methods.isEmpty && service.events.isEmpty { text += "  (no methods)\n" }
            for method in service.methods {
                var line = "  " + signature(of: method)
                if let summary = method["summary"]?.stringValue, !summary.isEmpty { line += "  \(summary)" }
                text += line + "\n"
            }
            for event in service.events {
                var line = "  event \(event["name"]?.stringValue ?? "?"): \(typeName(event["schema"]))"
                if let summary = event["summary"]?.stringValue, !summary.isEmpty { line += "  \(summary)" }
                text += line + "\n"
            }
        }
        return text
    }

    /// `name(a: number, b?: string) -> number` from an OpenRPC method object.
    static func signature(of method: JSONValue) -> String {
        let name = method["name"]?.stringValue ?? "?"
        let params = (method["params"]?.arrayValue ?? []).map { param in
            let optional = param["required"]?.boolValue == true ? "" : "?"
            return "\(param["name"]?.stringValue ?? "_")\(optional): \(typeName(param["schema"]))"
        }
        var text = "\(name)(\(params.joined(separator: ", ")))"
        if let result = method["result"] { text += " -> \(typeName(result["schema"]))" }
        return text
    }

    /// A short type for a JSON Schema: `number`, `[string]`, `string | null`, `any`.
    static func typeName(_ schema: JSONValue?) -> String {
        guard let schema, case .object = schema else { return "any" }
        if let type = schema["type"]?.stringValue {
            if type == "array", let items = schema["items"] { return "[\(typeName(items))]" }
            return type
        }
        if let types = schema["type"]?.arrayValue {
            return types.compactMap(\.stringValue).joined(separator: " | ")
        }
        if let constant = schema["const"] { return constant.jsonText }
        if let cases = schema["enum"]?.arrayValue { return cases.map(\.jsonText).joined(separator: " | ") }
        if let choices = (schema["oneOf"] ?? schema["anyOf"])?.arrayValue {
            return choices.map { typeName($0) }.joined(separator: " | ")
        }
        return "any"
    }
}
