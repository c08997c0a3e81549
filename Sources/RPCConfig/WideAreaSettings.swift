package import RPCDNSSD

/// `[WideArea]`: publishing rpcd's services in a unicast DNS zone by signed DNS UPDATE, for clients on
/// other subnets (docs/DISCOVERY.md, "Across subnets"). Off until `Domain=` is set.
package struct WideAreaSettings: Hashable, Sendable {
    /// `Domain=`: the zone the records go into (`_rpcd._tcp.DOMAIN`); nil: wide-area publishing is off.
    package var domain: String?
    /// `Server=`: the primary server that accepts updates for the zone.
    package var server: DNSServerAddress?
    /// `KeyFile=`: the TSIG key, as `tsig-keygen` writes it; only root (or rpcd's user) may read it.
    package var keyFile: String?
    /// `TTL=`: seconds; the records' TTL (how long resolvers may cache them).
    package var ttl: Int
    /// `Lease=`: seconds a host's records stand without a refresh; rpcd refreshes every `Lease=`/2, and a host
    /// killed without withdrawing is removed by the other publishers once it passed (docs/DISCOVERY.md, "Leases").
    package var lease: Int
    /// `AdvertiseAddress=`: the A/AAAA records of the host; empty: the listeners' own address, or for a
    /// wildcard listener every global address of the host's interfaces.
    package var advertiseAddresses: [String]

    package static let defaultTTL = 120
    package static let ttlRange = 5...86_400
    package static let defaultLease = 120
    /// From 4 s (tests; refreshes every 2 s) to a day.
    package static let leaseRange = 4...86_400

    package init(
        domain: String? = nil, server: DNSServerAddress? = nil, keyFile: String? = nil, ttl: Int = defaultTTL,
        lease: Int = defaultLease, advertiseAddresses: [String] = []
    ) {
        self.domain = domain
        self.server = server
        self.keyFile = keyFile
        self.ttl = ttl
        self.lease = lease
        self.advertiseAddresses = advertiseAddresses
    }

    package var enabled: Bool { domain != nil }
}
