/// One browse of a unicast DNS-SD domain (RFC 6763 §4): the PTR records of a type, then each instance's SRV
/// and TXT, then the addresses and the lease (`WideAreaLease`) of the SRV target. A snapshot;
/// `RPCServiceDiscovery` repeats it to follow changes (unicast DNS has no multicast announcements to wait for).
package struct WideAreaBrowser: Sendable {
    /// One instance as the zone describes it.
    package struct Instance: Hashable, Sendable {
        /// The instance label, unescaped (`calc on h1`).
        package var name: String
        /// The instance's own name, absolute, in presentation format (the PTR records' target).
        package var owner: String
        package var domain: String
        package var txt: [[UInt8]]
        /// The SRV target, absolute (`h1.example.net.`).
        package var target: String
        package var port: Int
        /// The target's A and AAAA addresses, IPv4 first (empty when not asked for).
        package var addresses: [String]
        /// The target's lease; nil when it has none (a publisher that keeps no lease, or a record made by hand).
        package var lease: WideAreaLease?

        package init(
            name: String, owner: String, domain: String, txt: [[UInt8]], target: String, port: Int, addresses: [String],
            lease: WideAreaLease?
        ) {
            self.name = name
            self.owner = owner
            self.domain = domain
            self.txt = txt
            self.target = target
            self.port = port
            self.addresses = addresses
            self.lease = lease
        }
    }

    package var domain: String
    package var client: DNSQueryClient

    package init(domain: String, client: DNSQueryClient = DNSQueryClient()) {
        self.domain = domain
        self.client = client
    }

    /// The instances of `type` (`_rpcd._tcp` or a subtype `_calc._sub._rpcd._tcp`) a client may use now: those
    /// with an SRV record and an address whose host's lease has not passed at `now` (Unix seconds). A host
    /// that died without withdrawing drops out here the moment its lease ends, before anyone deletes it.
    package func browse(type: String, now: Int = WideAreaLease.now()) throws(DNSQueryClient.Failure) -> [Instance] {
        try scan(type: type, addresses: true).filter { instance in
            !instance.addresses.isEmpty && !(instance.lease?.isExpired(at: now) ?? false)
        }
    }

    /// Every instance of `type` with an SRV record, expired or not, each target's lease asked once; the
    /// addresses only when `addresses` (sweeping needs none).
    package func scan(type: String, addresses: Bool) throws(DNSQueryClient.Failure) -> [Instance] {
        let absoluteDomain = DNSPresentation.absolute(domain)
        var instances: [Instance] = []
        var leases: [String: WideAreaLease?] = [:]
        var hostAddresses: [String: [String]] = [:]
        for pointer in try client.pointers(type + "." + absoluteDomain) {
            guard let service = try client.services(pointer).first, let label = DNSPresentation.labels(of: pointer).first
            else { continue }
            let target = service.target.lowercased()
            if leases[target] == nil {
                leases[target] = .some(WideAreaLease(txt: try client.texts(service.target)))
            }
            if addresses, hostAddresses[target] == nil {
                hostAddresses[target] = try client.addresses(service.target).sorted { ($0.contains(":") ? 1 : 0) < ($1.contains(":") ? 1 : 0) }
            }
            instances.append(
                Instance(
                    name: label, owner: pointer, domain: domain, txt: try client.texts(pointer), target: service.target,
                    port: service.port, addresses: hostAddresses[target] ?? [], lease: leases[target] ?? nil))
        }
        return instances
    }
}
