import ArgumentParser
import RPCDNSSD
import RPCDiscovery

/// Where `browse` and `call --service` look: the link (Avahi), or a unicast DNS domain (wide-area DNS-SD).
struct DiscoveryOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp("Browse this unicast DNS domain (wide-area DNS-SD) instead of the local link; no avahi-daemon needed.", valueName: "domain"))
    var domain: String?

    @Option(
        name: .customLong("dns-server"),
        help: ArgumentHelp("With --domain: the DNS server to ask (ADDRESS[:PORT]) instead of /etc/resolv.conf's.", valueName: "address"))
    var dnsServer: String?

    func validate() throws {
        if dnsServer != nil, domain == nil { throw ValidationError("--dns-server needs --domain") }
        if let dnsServer, DNSServerAddress(parsing: dnsServer) == nil {
            throw ValidationError("--dns-server takes an IP address, optionally with a port: 192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53")
        }
    }

    func discovery(service: String?) -> RPCServiceDiscovery {
        RPCServiceDiscovery(service: service, domain: domain, dnsServer: dnsServer.flatMap(DNSServerAddress.init(parsing:)))
    }

    /// What to check when browsing fails, for the error message.
    var hint: String {
        guard let domain else { return "is avahi-daemon running? rpcctl finds services through it" }
        return "do the DNS servers\(dnsServer.map { " (\($0))" } ?? " of /etc/resolv.conf") answer for \(domain)?"
    }
}
