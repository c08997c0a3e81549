package import RPCDNSSD

/// One rpcd service instance found on the network: where it is and what it serves.
package struct RPCDiscoveredInstance: Hashable, Sendable {
    /// The DNS-SD instance name, e.g. `calc on build-7`.
    package var name: String
    package var domain: String
    /// What the TXT record says: service, version, fingerprint, protocol.
    package var advertisement: RPCAdvertisement
    /// The host's mDNS name, e.g. `build-7.local`.
    package var hostName: String
    /// The address in text form (`10.0.0.2`, `fe80::1%eth0` for link-local IPv6).
    package var address: String
    package var port: Int
    /// The interface the instance was seen on (Avahi's index), and whether over IPv6.
    package var interfaceIndex: Int32
    package var isIPv6: Bool

    package var service: String { advertisement.service }
    package var version: String { advertisement.version }
    package var fingerprint: String { advertisement.fingerprint }

    /// `ADDRESS:PORT`, with brackets for IPv6, and `tls://` first when the record says `tls=1`: the form
    /// `rpcctl --address` takes.
    package var endpointText: String {
        (advertisement.tls ? "tls://" : "") + (isIPv6 ? "[\(address)]:\(port)" : "\(address):\(port)")
    }

    package init(
        name: String, domain: String, advertisement: RPCAdvertisement, hostName: String, address: String, port: Int,
        interfaceIndex: Int32, isIPv6: Bool
    ) {
        self.name = name
        self.domain = domain
        self.advertisement = advertisement
        self.hostName = hostName
        self.address = address
        self.port = port
        self.interfaceIndex = interfaceIndex
        self.isIPv6 = isIPv6
    }
}

/// What a browse reports, in order.
package enum RPCDiscoveryEvent: Hashable, Sendable {
    /// An instance was found and resolved.
    case appeared(RPCDiscoveredInstance)
    /// A known instance's record changed (a new version or fingerprint, a new address).
    case updated(RPCDiscoveredInstance)
    /// An instance went away; the value is the last one seen.
    case disappeared(RPCDiscoveredInstance)
    /// Every instance known right now has been reported: what the network answered to the first query has
    /// arrived and been resolved (or failed to resolve). Sent once; a one-shot listing can stop here.
    case settled
}
