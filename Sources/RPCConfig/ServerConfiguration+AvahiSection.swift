import RPCDNSSD

extension ServerConfiguration {
    /// `[Avahi]`: DNS-SD advertising. The order here is the order `rendered()` writes the keys in.
    static let avahiSection = INISection<ServerConfiguration>(
        "Avahi",
        keys: [
            .boolean("Enabled", \.avahi.enabled),
            .value("InstanceName", \.avahi.instanceName, parse: parseInstanceName, format: \.text),
            .list("Interfaces", \.avahi.interfaces, parse: parseInterface, format: { $0 }),
            .value("Protocols", \.avahi.protocols, parse: parseProtocols, format: \.rawValue),
        ]
    )

    @Sendable private static func parseInstanceName(_ entry: INIEntry) throws(ConfigError) -> DNSSDInstanceNameTemplate {
        do {
            return try DNSSDInstanceNameTemplate(parsing: entry.value)
        } catch {
            throw entry.invalidValue(expected: error.problem)
        }
    }

    /// A network interface name as the kernel allows it: 1–15 bytes, no `/`, no blanks (IFNAMSIZ is 16 with
    /// the NUL). Whether it exists is checked when publishing, since interfaces come and go.
    @Sendable private static func parseInterface(_ entry: INIEntry) throws(ConfigError) -> String {
        let name = entry.value
        guard (1...15).contains(name.utf8.count), name != ".", name != "..",
              !name.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ":") || $0 >= 0x7F })
        else {
            throw entry.invalidValue(expected: "expected a network interface name such as eth0 (1 to 15 characters, no '/', ':' or blanks)")
        }
        return name
    }

    @Sendable private static func parseProtocols(_ entry: INIEntry) throws(ConfigError) -> AvahiSettings.IPProtocols {
        guard let value = AvahiSettings.IPProtocols(rawValue: entry.value.lowercased()) else {
            throw entry.invalidValue(expected: "expected ipv4, ipv6 or any")
        }
        return value
    }
}
