import RPCDNSSD

extension ServerConfiguration {
    /// `[WideArea]`: wide-area DNS-SD. The order here is the order `rendered()` writes the keys in.
    static let wideAreaSection = INISection<ServerConfiguration>(
        "WideArea",
        keys: [
            .value("Domain", \.wideArea.domain, parse: parseDomain, format: { $0 ?? "" }),
            .value("Server", \.wideArea.server, parse: parseServer, format: { $0.map(\.description) ?? "" }),
            .value("KeyFile", \.wideArea.keyFile, parse: parseKeyFile, format: { $0 ?? "" }),
            .integer("TTL", \.wideArea.ttl, in: WideAreaSettings.ttlRange),
            .integer("Lease", \.wideArea.lease, in: WideAreaSettings.leaseRange),
            .list("AdvertiseAddress", \.wideArea.advertiseAddresses, parse: parseAddress, format: { $0 }),
        ]
    )

    /// `Domain=` without `Server=` and `KeyFile=` cannot publish: refused at the `Domain=` line.
    func checkWideArea(_ documents: [INIDocument]) throws(ConfigError) {
        guard wideArea.enabled, wideArea.server == nil || wideArea.keyFile == nil else { return }
        let line = documents.flatMap(\.entries).last { $0.section == "WideArea" && $0.key == "Domain" }
        let missing = [wideArea.server == nil ? "Server=" : nil, wideArea.keyFile == nil ? "KeyFile=" : nil].compactMap { $0 }
        throw ConfigError(
            file: line?.file ?? Self.defaultPath, line: line?.line,
            message: "[WideArea] Domain= needs \(missing.joined(separator: " and ")): the primary server that accepts "
                + "updates and the TSIG key to sign them with")
    }

    /// A DNS domain of letters, digits, `-` and `_` labels; `local` is mDNS's, not a zone.
    @Sendable private static func parseDomain(_ entry: INIEntry) throws(ConfigError) -> String? {
        var domain = entry.value
        if domain.hasSuffix(".") { domain.removeLast() }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard domain.utf8.count <= 253, !labels.isEmpty,
              labels.allSatisfy({ (1...63).contains($0.utf8.count) && $0.allSatisfy { $0.isLetter && $0.isASCII || $0.isNumber && $0.isASCII || $0 == "-" || $0 == "_" } })
        else {
            throw entry.invalidValue(expected: "expected a DNS domain such as services.example.net")
        }
        guard domain.lowercased() != "local", !domain.lowercased().hasSuffix(".local") else {
            throw entry.invalidValue(expected: "'local' is multicast DNS, which [Avahi] covers; name a unicast zone")
        }
        return domain
    }

    @Sendable private static func parseServer(_ entry: INIEntry) throws(ConfigError) -> DNSServerAddress? {
        guard let server = DNSServerAddress(parsing: entry.value) else {
            throw entry.invalidValue(expected: "expected the server's IP address, optionally with a port: 192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53")
        }
        return server
    }

    @Sendable private static func parseKeyFile(_ entry: INIEntry) throws(ConfigError) -> String? {
        guard entry.value.hasPrefix("/") else {
            throw entry.invalidValue(expected: "expected an absolute path to a tsig-keygen key file, such as /etc/rpcd/update.key")
        }
        return entry.value
    }

    @Sendable private static func parseAddress(_ entry: INIEntry) throws(ConfigError) -> String {
        guard DNSServerAddress.isIPAddress(entry.value) else {
            throw entry.invalidValue(expected: "expected an IP address other subnets reach this host at, such as 192.0.2.10 or 2001:db8::10")
        }
        return entry.value
    }
}
