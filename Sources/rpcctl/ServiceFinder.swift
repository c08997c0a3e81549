import ArgumentParser
import RPCDiscovery

/// Picks the instance `call --service` talks to: browse the service's subtype, take an instance whose
/// interface fingerprint matches `--api` (any instance without it), preferring IPv4 addresses, which need
/// no interface scope. Returns as soon as a suitable IPv4 instance appears, else when the browse settles or
/// the timeout passes.
enum ServiceFinder {
    enum Failure: Error, CustomStringConvertible {
        case notFound(service: String)
        case incompatible(service: String, wanted: String, found: [RPCDiscoveredInstance])

        var description: String {
            switch self {
            case .notFound(let service):
                return "no instance of service '\(service)' found on the network (rpcctl browse lists what is there)"
            case .incompatible(let service, let wanted, let found):
                let instances = found.map { "'\($0.name)' at \($0.endpointText) has fingerprint \($0.fingerprint)" }
                return "incompatible interface: --api \(wanted) asks for another interface of '\(service)' than "
                    + "every instance found offers (\(instances.joined(separator: "; "))); not calling it"
            }
        }
    }

    static func matches(_ instance: RPCDiscoveredInstance, api: String?) -> Bool {
        api.map { instance.fingerprint.lowercased() == $0.lowercased() } ?? true
    }

    /// The best of `candidates`: matching `api`, IPv4 before IPv6, then by name for a stable choice.
    static func choose(from candidates: [RPCDiscoveredInstance], service: String, api: String?) throws(Failure) -> RPCDiscoveredInstance {
        let suitable = candidates.filter { matches($0, api: api) }
            .sorted { ($0.isIPv6 ? 1 : 0, $0.name, $0.endpointText) < ($1.isIPv6 ? 1 : 0, $1.name, $1.endpointText) }
        if let best = suitable.first { return best }
        guard let api, !candidates.isEmpty else { throw .notFound(service: service) }
        throw .incompatible(service: service, wanted: api, found: InstanceCollector.sorted(candidates))
    }

    static func find(_ discovery: RPCServiceDiscovery, service: String, api: String?, timeout: Duration) async throws -> RPCDiscoveredInstance {
        let candidates = try await InstanceCollector.firstResult(within: timeout) { () async throws -> [RPCDiscoveredInstance] in
            var seen: [String: RPCDiscoveredInstance] = [:]
            for try await event in discovery {
                switch event {
                case .appeared(let instance), .updated(let instance):
                    seen[InstanceCollector.key(instance)] = instance
                    if !instance.isIPv6, matches(instance, api: api) { return [instance] }
                case .disappeared(let instance): seen[InstanceCollector.key(instance)] = nil
                case .settled: return Array(seen.values)
                }
            }
            return Array(seen.values)
        } ?? []
        return try choose(from: candidates, service: service, api: api)
    }
}
