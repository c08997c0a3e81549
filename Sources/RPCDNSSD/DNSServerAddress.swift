/// Where a DNS server listens: an IP address (no name: resolving the primary through the DNS it serves would
/// be circular) and a port, 53 by default. Written `ADDRESS`, `ADDRESS:PORT`, `[IPV6]:PORT` or `IPV6`.
package struct DNSServerAddress: Hashable, Sendable, CustomStringConvertible {
    package static let defaultPort = 53

    package var address: String
    package var port: Int

    package init(address: String, port: Int = defaultPort) {
        self.address = address
        self.port = port
    }

    package var isIPv6: Bool { address.contains(":") }

    package var description: String { isIPv6 ? "[\(address)]:\(port)" : "\(address):\(port)" }

    /// Parses the forms above; nil when it is not an IP address with an optional port in 1...65535.
    package init?(parsing text: String) {
        var address = text
        var port = Self.defaultPort
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            address = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == ":", let value = Int(rest.dropFirst()) else { return nil }
                port = value
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            address = String(text[..<colon])
            guard let value = Int(text[text.index(after: colon)...]) else { return nil }
            port = value
        }
        guard (1...65535).contains(port), Self.isIPAddress(address) else { return nil }
        self.init(address: address, port: port)
    }

    package static func isIPAddress(_ text: String) -> Bool {
        if text.contains(":") {
            return !text.isEmpty && text.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } && text.count <= 45
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isNumber) && Int(part).map { $0 <= 255 } == true
        }
    }
}
