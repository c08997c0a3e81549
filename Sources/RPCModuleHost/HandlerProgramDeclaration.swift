import RPCBinding
import RPCJSON
import RPCProtocol

/// What a handler program declares in its answer to `rpcd.start` (docs/HANDLER-PROTOCOL.md §3), read into the
/// descriptor a module host reports for a module, with the rules a module's descriptor follows.
struct HandlerProgramDeclaration {
    /// The service's name as the program declared it: what its calls and events use.
    var name: String
    /// The descriptor the host reports (its name the declared one; rpcd serves it as `Service=` says).
    var descriptor: RPCServiceDescriptor
    /// Whether each method (by index) may run beside other calls.
    var concurrent: [Bool]
    /// Each method's params binder (by index): a call's params are bound to names and checked before they are sent.
    var binders: [ParamsBinder]
    /// Each event's payload checker (by member name), a one-parameter binder of its schema.
    var eventPayloads: [String: ParamsBinder]
    /// The `[Config]` keys it declared, if it declared them.
    var config: [RPCParam]?

    struct Problem: Error {
        var reason: String
    }

    init(_ result: JSONValue, serving: String?) throws(Problem) {
        guard case .object = result else { throw Problem(reason: "the declaration is not an object") }
        guard let version = result["protocol"]?.intValue, (1...HandlerProgram.protocolVersion).contains(version) else {
            throw Problem(reason: "'protocol' must be 1")
        }
        guard let services = result["services"]?.arrayValue, services.count == 1, let service = services.first else {
            throw Problem(reason: "'services' must hold exactly one service")
        }
        guard let name = service["name"]?.stringValue, ServiceName.isValid(name) else {
            throw Problem(reason: "the service's 'name' must be a service name (\(ServiceName.rule))")
        }
        guard let version = service["version"]?.stringValue, !version.isEmpty else {
            throw Problem(reason: "the service needs a 'version'")
        }
        guard let methods = service["methods"]?.arrayValue, !methods.isEmpty else {
            throw Problem(reason: "the service needs at least one method")
        }
        var descriptors: [RPCMethodDescriptor] = []
        var concurrent: [Bool] = []
        for method in methods {
            let (descriptor, isConcurrent) = try Self.method(method)
            guard !descriptors.contains(where: { $0.name == descriptor.name }) else {
                throw Problem(reason: "method '\(descriptor.name)' is declared twice")
            }
            descriptors.append(descriptor)
            concurrent.append(isConcurrent)
        }
        var events: [RPCEventDescriptor] = []
        for event in service["events"]?.arrayValue ?? [] {
            guard let eventName = event["name"]?.stringValue, MemberName.isValid(eventName) else {
                throw Problem(reason: "an event's 'name' must be a member name (\(MemberName.rule))")
            }
            guard !events.contains(where: { $0.name == eventName }) else { throw Problem(reason: "event '\(eventName)' is declared twice") }
            events.append(RPCEventDescriptor(
                name: eventName, summary: event["summary"]?.stringValue ?? "", schema: event["schema"] ?? [:]))
        }
        self.name = name
        self.descriptor = RPCServiceDescriptor(
            name: serving ?? name, version: version, summary: service["summary"]?.stringValue ?? "", methods: descriptors,
            events: events)
        self.concurrent = concurrent
        self.binders = descriptors.map { ParamsBinder($0.params) }
        self.eventPayloads = Dictionary(uniqueKeysWithValues: events.map { ($0.name, ParamsBinder([RPCParam("data", schema: $0.schema)])) })
        self.config = try service["config"]?.arrayValue.map { keys throws(Problem) in
            try keys.map { key throws(Problem) in try Self.param(key, of: "[Config] key") }
        }
    }

    private static func method(_ method: JSONValue) throws(Problem) -> (RPCMethodDescriptor, Bool) {
        guard let name = method["name"]?.stringValue, MemberName.isValid(name) else {
            throw Problem(reason: "a method's 'name' must be a member name (\(MemberName.rule))")
        }
        guard let list = method["params"]?.arrayValue else { throw Problem(reason: "method '\(name)' needs 'params' (an array)") }
        var params: [RPCParam] = []
        for param in list {
            let read = try Self.param(param, of: "method '\(name)': a parameter")
            guard !params.contains(where: { $0.name == read.name }) else {
                throw Problem(reason: "method '\(name)': parameter '\(read.name)' is declared twice")
            }
            params.append(read)
        }
        var errors: [RPCError] = []
        for error in method["errors"]?.arrayValue ?? [] {
            guard let code = error["code"]?.intValue, !(-32768 ... -32000).contains(code), let message = error["message"]?.stringValue else {
                throw Problem(reason: "method '\(name)': an error needs an integer 'code' outside -32768…-32000 and a 'message'")
            }
            errors.append(RPCError(code: code, message: message))
        }
        let result = method["result"].map { result in
            RPCParam(result["name"]?.stringValue ?? "result", schema: result["schema"] ?? [:], summary: result["summary"]?.stringValue ?? "")
        }
        let descriptor = RPCMethodDescriptor(
            name: name, summary: method["summary"]?.stringValue ?? "", params: params, result: result, errors: errors,
            flags: method["readOnly"] == .bool(true) ? .readOnly : [])
        return (descriptor, method["concurrent"] == .bool(true))
    }

    private static func param(_ param: JSONValue, of what: String) throws(Problem) -> RPCParam {
        guard let name = param["name"]?.stringValue, MemberName.isValid(name) else {
            throw Problem(reason: "\(what)'s 'name' must be a member name (\(MemberName.rule))")
        }
        return RPCParam(
            name, schema: param["schema"] ?? [:], optional: param["required"] == .bool(false),
            summary: param["summary"]?.stringValue ?? "")
    }
}
