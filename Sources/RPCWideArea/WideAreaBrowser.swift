/// One browse of a unicast DNS-SD domain (RFC 6763 §4): the PTR records of a type, then each instance's SRV
/// and TXT, then the addresses of the SRV target. A snapshot; `RPCServiceDiscovery` repeats it to follow
/// changes (unicast DNS has no multicast announcements to wait for).
package struct WideAreaBrowser: Sendable {
    /// One instance as the zone describes it.
    package struct Instance: Hashable, Sendable {
        /// The instance label, unescaped (`calc on h1`).
        package var name: String
        package var domain: String
        package var txt: [[UInt8]]
        /// The SRV target, absolute (`h1.example.net.`).
        package var target: String
        package var port: Int
        /// The target's A and AAAA addresses, IPv4 first.
        package var addresses: [String]
    }

    package var domain: String
    package var client: DNSQueryClient

    package init(domain: String, client: DNSQueryClient = DNSQueryClient()) {
        self.domain = domain
        self.client = client
    }

    /// The instances of `type` (`_rpcd._tcp` or a subtype `_calc._sub._rpcd._tcp`) in the domain now.
    /// Instances without an SRV record or an address are left out (half-written or half-withdrawn).
    package func browse(type: String) throws(DNSQueryClient.Failure) -> [Instance] {
        let absoluteDomain = DNSPresentation.absolute(domain)
        var instances: [Instance] = []
        for pointer in try client.pointers(type + "." + absoluteDomain) {
            guard let service = try client.services(pointer).first else { continue }
            let addresses = try client.addresses(service.target).sorted { ($0.contains(":") ? 1 : 0) < ($1.contains(":") ? 1 : 0) }
            guard !addresses.isEmpty, let label = DNSPresentation.labels(of: pointer).first else { continue }
            instances.append(
                Instance(
                    name: label, domain: domain, txt: try client.texts(pointer), target: service.target, port: service.port,
                    addresses: addresses))
        }
        return instances
    }
}
