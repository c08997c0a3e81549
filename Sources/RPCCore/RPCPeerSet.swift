package import RPCProtocol

/// The peers a list of principals names, with user and group names resolved to ids when it is made, as for
/// access rules: who `Administrators=` names. Immutable and thread-safe.
package struct RPCPeerSet: Sendable {
    private let matchers: [RPCAccessPolicy.Matcher]
    /// Names that did not resolve; such an entry names nobody.
    package let unresolved: [String]

    package init(_ principals: [RPCPrincipal]) {
        var unresolved: Set<String> = []
        matchers = principals.compactMap { RPCAccessPolicy.Matcher($0, unresolved: &unresolved) }
        self.unresolved = unresolved.sorted()
    }

    /// Whether `peer` is one of the set. Only Unix-socket peers can be: the set gives what TCP cannot prove
    /// (who the user is), so an address or a certificate is never enough.
    package func contains(_ peer: RPCPeer) -> Bool {
        guard case .unixSocket = peer.address else { return false }
        return matchers.contains { $0.matches(peer) }
    }
}
