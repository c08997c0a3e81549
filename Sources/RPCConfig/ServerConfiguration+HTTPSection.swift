import RPCProtocol

extension ServerConfiguration {
    /// `[HTTP]`: what web pages may do with the HTTP listeners (`HTTPSettings`). The order here is the order
    /// `rendered()` writes the keys in.
    static let httpSection = INISection<ServerConfiguration>(
        "HTTP",
        keys: [
            .list("AllowOrigins", \.http.allowOrigins, parse: parseOrigin, format: { $0 }),
            .list("ServerNames", \.http.serverNames, parse: parseServerName, format: { $0 }),
            .boolean("Console", \.http.console),
        ]
    )

    /// `*`, or an origin as browsers send it: `SCHEME://HOST[:PORT]`, no path, no trailing slash (compared
    /// as text with the `Origin:` header, so it must be written the way browsers write it).
    @Sendable private static func parseOrigin(_ entry: INIEntry) throws(ConfigError) -> String {
        let value = entry.value
        if value == "*" { return value }
        let expected = "expected * or an origin as browsers send it, SCHEME://HOST[:PORT] without a path, such as https://dashboard.example.net"
        let scheme = value.prefix { $0 != ":" }
        guard value.dropFirst(scheme.count).hasPrefix("://") else { throw entry.invalidValue(expected: expected) }
        let authority = value.dropFirst(scheme.count + 3)
        guard scheme == "http" || scheme == "https", !authority.isEmpty, !authority.contains("/"),
              value == value.lowercased(), !value.contains(where: \.isWhitespace)
        else { throw entry.invalidValue(expected: expected + " (in lower case)") }
        return value
    }

    /// A DNS host name (letters, digits, `-` and `.`), in lower case: the `Host:` header's name is compared
    /// without case.
    @Sendable private static func parseServerName(_ entry: INIEntry) throws(ConfigError) -> String {
        let name = entry.value.lowercased()
        guard !name.isEmpty, name.utf8.count <= 253,
              name.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) })
        else { throw entry.invalidValue(expected: "expected a host name such as rpcd.example.net (letters, digits, '-' and '.')") }
        return name
    }
}
