package import RPCBinding
package import RPCProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The access rules of every service, with user and group names resolved to ids. Immutable; built when the
/// configuration is loaded and swapped with the registry on reload. Thread-safe.
package struct RPCAccessPolicy: Sendable {
    private let fallback: ResolvedRule
    private let rules: [String: ResolvedRule]
    /// Names that did not resolve (a user or group that does not exist): such an entry grants nothing.
    package let unresolved: [String]

    /// `rules` by service name; services without one get `defaultRule`.
    package init(default defaultRule: RPCAccessRule, services rules: [String: RPCAccessRule] = [:]) {
        var unresolved: Set<String> = []
        self.fallback = ResolvedRule(defaultRule, unresolved: &unresolved)
        self.rules = rules.mapValues { ResolvedRule($0, unresolved: &unresolved) }
        self.unresolved = unresolved.sorted()
    }

    package static let unrestricted = RPCAccessPolicy(default: .unrestricted)

    /// Whether `peer` may call `method` of `service`.
    package func allows(_ peer: RPCPeer, service: String, method: RPCMethodDescriptor) -> Bool {
        access(service: service, method: method).allows(peer)
    }

    /// Who may call `method` of `service`, decided once: the registry keeps it with the method's route, so
    /// that a call looks no rule up by name.
    package func access(service: String, method: RPCMethodDescriptor) -> MethodAccess {
        MethodAccess(
            rule: method.flags.contains(.anyPeer) ? nil : rules[service] ?? fallback,
            readOnly: method.flags.contains(.readOnly))
    }

    /// The rule that applies to one method (`access(service:method:)`).
    package struct MethodAccess: Sendable {
        /// Nil: any peer (`.anyPeer`).
        fileprivate let rule: ResolvedRule?
        fileprivate let readOnly: Bool

        /// Whether every peer may call the method: no rule applies to it, or its rule allows `anyone` (for a
        /// read-only method, in `AllowRead=` too), as `allows` would answer for every peer.
        package var allowsAnyPeer: Bool {
            guard let rule else { return true }
            func anyone(_ matchers: [Matcher]) -> Bool {
                matchers.contains { if case .anyone = $0 { true } else { false } }
            }
            return anyone(rule.allow) || (readOnly && anyone(rule.allowRead))
        }

        /// Whether `peer` may call the method.
        package func allows(_ peer: RPCPeer) -> Bool {
            guard let rule else { return true }
            if rule.allow.contains(where: { $0.matches(peer) }) { return true }
            return readOnly && rule.allowRead.contains(where: { $0.matches(peer) })
        }
    }

    /// Whether `Allow=` of `service` names `peer`: it may call every method, the state-changing ones too (for
    /// `rpcd`, the administrators). What only they may see (the peers `rpcd.metrics` names) asks this.
    package func allowsEveryMethod(_ peer: RPCPeer, service: String) -> Bool {
        (rules[service] ?? fallback).allow.contains { $0.matches(peer) }
    }

    /// Whether `peer` may subscribe to `service`'s events: as for a read-only method of it (`AllowRead=` is
    /// enough), since receiving events changes nothing.
    package func allowsSubscribing(_ peer: RPCPeer, service: String) -> Bool {
        let rule = rules[service] ?? fallback
        return rule.allow.contains(where: { $0.matches(peer) }) || rule.allowRead.contains(where: { $0.matches(peer) })
    }

    /// The services with rules of their own (from their handler files), sorted.
    package var servicesWithOwnRules: [String] { rules.keys.sorted() }

    /// The rule of every service without one of its own, as configured.
    package var defaultRule: RPCAccessRule { fallback.configured }

    /// The rule that applies to `service`, as configured.
    package func rule(for service: String) -> RPCAccessRule {
        (rules[service] ?? fallback).configured
    }

    /// One rule with names turned into ids.
    fileprivate struct ResolvedRule: Sendable {
        let configured: RPCAccessRule
        let allow: [Matcher]
        let allowRead: [Matcher]

        init(_ rule: RPCAccessRule, unresolved: inout Set<String>) {
            configured = rule
            allow = rule.allow.compactMap { Matcher($0, unresolved: &unresolved) }
            allowRead = rule.allowRead.compactMap { Matcher($0, unresolved: &unresolved) }
        }
    }

    /// A principal ready to match: nil when it names a user or group that does not exist.
    enum Matcher: Sendable {
        case anyone, local
        case uid(UInt32), gid(UInt32)
        case network(RPCNetwork)
        case client(String)
        case anyClient

        init?(_ principal: RPCPrincipal, unresolved: inout Set<String>) {
            switch principal {
            case .anyone: self = .anyone
            case .local: self = .local
            case .network(let network): self = .network(network)
            case .client("*"): self = .anyClient
            case .client(let name): self = .client(name)
            case .user(let name):
                guard let uid = UInt32(name) ?? Self.userID(name) else {
                    unresolved.insert(principal.description)
                    return nil
                }
                self = .uid(uid)
            case .group(let name):
                guard let gid = UInt32(name) ?? Self.groupID(name) else {
                    unresolved.insert(principal.description)
                    return nil
                }
                self = .gid(gid)
            }
        }

        func matches(_ peer: RPCPeer) -> Bool {
            switch self {
            case .anyone: return true
            case .local: return peer.isLocal
            case .uid(let uid): return peer.credentials?.uid == uid
            case .gid(let gid): return peer.credentials.map { $0.gid == gid || $0.groups.contains(gid) } ?? false
            case .network(let network):
                guard let address = peer.addressBytes else { return false }
                return network.contains(bytes: address)
            case .client(let name): return peer.certificateIdentities.contains(name)
            case .anyClient: return !peer.certificateIdentities.isEmpty
            }
        }

        private static func userID(_ name: String) -> UInt32? {
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            var buffer = [CChar](repeating: 0, count: 4096)
            guard getpwnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
            return entry.pw_uid
        }

        private static func groupID(_ name: String) -> UInt32? {
            var entry = group()
            var result: UnsafeMutablePointer<group>?
            var buffer = [CChar](repeating: 0, count: 16384)
            guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
            return entry.gr_gid
        }
    }
}
