package import RPCProtocol

extension RPCAccessPolicy {
    /// What other hosts may call through `listeners`, in one sentence for the log and `systemctl status`:
    /// "other hosts: nothing", "other hosts: read-only methods for 192.168.1.0/24", or "local only (no
    /// listener other hosts can reach)". Services whose handler files have rules of their own are named.
    package func exposure(listeners: [RPCEndpoint]) -> String {
        let reachable = listeners.contains { $0.tcpAddress != nil && !$0.isLoopback }
        guard reachable else { return "local only (no listener other hosts can reach)" }
        let everywhere = Self.remoteReach(of: defaultRule)
        var text = "other hosts: " + everywhere
        let own = servicesWithOwnRules.filter { Self.remoteReach(of: rule(for: $0)) != everywhere }
        if !own.isEmpty {
            text += "; " + own.map { "\($0): \(Self.remoteReach(of: rule(for: $0)))" }.joined(separator: "; ")
        }
        return text
    }

    /// Who among other hosts a rule lets in, and to what.
    private static func remoteReach(of rule: RPCAccessRule) -> String {
        let every = rule.allow.filter(\.canBeRemote)
        let read = rule.allowRead.filter(\.canBeRemote).filter { !every.contains($0) }
        var parts: [String] = []
        if !every.isEmpty { parts.append("every method for \(every.map(\.description).joined(separator: " "))") }
        if !read.isEmpty { parts.append("read-only methods for \(read.map(\.description).joined(separator: " "))") }
        return parts.isEmpty ? "nothing" : parts.joined(separator: ", ")
    }
}

extension RPCPrincipal {
    /// Whether a peer on another host can match: only `any`, a network that is not loopback, and TLS clients.
    var canBeRemote: Bool {
        switch self {
        case .anyone, .client: return true
        case .local, .user, .group: return false
        case .network(let network): return !network.isLoopback
        }
    }
}
