package import RPCDNSSD

/// rpcd's DNS-SD records in a unicast zone: exactly those avahi-daemon publishes on the link
/// (`RPCAdvertisement`), under `DOMAIN` instead of `local` (docs/DISCOVERY.md, "Across subnets"):
///
///     _rpcd._tcp.DOMAIN.                        PTR  calc\032on\032h1._rpcd._tcp.DOMAIN.
///     _calc._sub._rpcd._tcp.DOMAIN.             PTR  calc\032on\032h1._rpcd._tcp.DOMAIN.
///     calc\032on\032h1._rpcd._tcp.DOMAIN.       SRV  0 0 7390 h1.DOMAIN.
///     calc\032on\032h1._rpcd._tcp.DOMAIN.       TXT  "txtvers=1" "proto=1" "service=calc" "version=1.0.0" "fp=..."
///     h1.DOMAIN.                                A    10.0.1.2          (and AAAA)
///     h1.DOMAIN.                                TXT  "lease=120" "expires=1764141234" "owner=5f0c2a9e41b7d3c8"   (WideAreaLease)
///
/// Pure data: sending them is `DNSUpdateClient`'s, deciding when is `WideAreaPublisher`'s.
package struct WideAreaRecords: Hashable, Sendable {
    package var domain: String
    package var ttl: Int

    package init(domain: String, ttl: Int) {
        self.domain = DNSPresentation.absolute(domain)
        self.ttl = ttl
    }

    /// `_rpcd._tcp.DOMAIN.`: what browsing every service queries.
    package var serviceTypeName: String { RPCAdvertisement.serviceType + "." + domain }

    /// `_SERVICE._sub._rpcd._tcp.DOMAIN.` (nil when the service name breaks RFC 6335).
    package func subtypeName(_ service: String) -> String? {
        (try? RPCAdvertisement.subtype(for: service)).map { $0 + "." + domain }
    }

    /// The instance's own name: its label escaped, then the type and domain.
    package func instanceName(_ instance: String) -> String {
        DNSPresentation.label(instance) + "." + serviceTypeName
    }

    /// The host's name in the zone, the SRV target.
    package func hostName(_ host: String) -> String { DNSPresentation.label(host) + "." + domain }

    /// The SRV record of an instance: priority 0, weight 0, as avahi-daemon writes it.
    package func srv(instance: String, host: String, port: Int) -> DNSRecord {
        DNSRecord(owner: instanceName(instance), ttl: ttl, type: "SRV", data: "0 0 \(port) \(hostName(host))")
    }

    /// PTR (type and subtype), SRV and TXT of one instance; nil when its TXT record would be invalid.
    package func service(instance: String, advertisement: RPCAdvertisement, host: String, port: Int) -> [DNSRecord]? {
        guard let txt = try? advertisement.txtRecord(), let subtype = subtypeName(advertisement.service) else { return nil }
        let owner = instanceName(instance)
        return [
            DNSRecord(owner: serviceTypeName, ttl: ttl, type: "PTR", data: owner),
            DNSRecord(owner: subtype, ttl: ttl, type: "PTR", data: owner),
            srv(instance: instance, host: host, port: port),
            DNSRecord(owner: owner, ttl: ttl, type: "TXT", data: Self.text(txt.strings)),
        ]
    }

    /// The host's lease (`WideAreaLease`): a TXT record at the SRV target.
    package func lease(host: String, _ lease: WideAreaLease) -> DNSRecord {
        DNSRecord(owner: hostName(host), ttl: ttl, type: "TXT", data: Self.text(lease.txt))
    }

    /// TXT RDATA in presentation format: each string quoted and escaped.
    package static func text(_ strings: [[UInt8]]) -> String {
        strings.map(DNSPresentation.characterString).joined(separator: " ")
    }

    /// The A and AAAA records of the host (addresses as text; an address with `:` is IPv6).
    package func addresses(host: String, _ addresses: [String]) -> [DNSRecord] {
        addresses.map { address in
            DNSRecord(owner: hostName(host), ttl: ttl, type: address.contains(":") ? "AAAA" : "A", data: address)
        }
    }
}
