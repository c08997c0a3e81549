#if canImport(Glibc)
import Glibc
#endif
import Logging
import RPCAvahi
package import RPCConfig
import RPCDNSSD
import RPCLogging
import RPCProtocol
package import RPCWideArea

/// Wide-area DNS-SD for the daemon ([WideArea], docs/DISCOVERY.md "Across subnets"): the key, the addresses,
/// the publisher.
package enum WideAreaAdvertising {
    /// The TSIG key of `KeyFile=`, read and checked at start-up (and by `--check-config`) so that a key other
    /// users may read stops rpcd as a TLS key does; nil when wide-area publishing is off.
    package static func key(for settings: ServerConfiguration) throws(TSIGKeyError) -> TSIGKey? {
        guard settings.wideArea.enabled, let path = settings.wideArea.keyFile else { return nil }
        return try TSIGKey.load(path: path)
    }

    /// The addresses of the host's A/AAAA records: `AdvertiseAddress=` when given; else the listeners' own
    /// addresses when they bind specific ones; else every address of the host's interfaces that another
    /// subnet could route to (not loopback, not IPv6 link-local, which only means something on one link).
    static func addresses(settings: WideAreaSettings, listeners: [RPCEndpoint]) -> [String] {
        if !settings.advertiseAddresses.isEmpty { return settings.advertiseAddresses }
        let bound = listeners.filter { !$0.isLoopback }.compactMap { $0.tcpAddress?.host }
            .filter { $0 != "0.0.0.0" && $0 != "::" && DNSServerAddress.isIPAddress($0) }
        if !bound.isEmpty { return Array(Set(bound)).sorted() }
        return interfaceAddresses()
    }

    static func interfaceAddresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [String] = []
        var current = list
        while let entry = current {
            defer { current = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0,
                  entry.pointee.ifa_flags & UInt32(IFF_UP) != 0
            else { continue }
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            guard getnameinfo(address, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let value = Self.string(text)
            if value.lowercased().hasPrefix("fe80:") || value.contains("%") { continue }
            if !addresses.contains(value) { addresses.append(value) }
        }
        return addresses
    }

    /// The host's label in the zone: the first label of its host name (`%h`).
    static func hostLabel() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        let name = string(buffer)
        return String(name.prefix { $0 != "." }).isEmpty ? "localhost" : String(name.prefix { $0 != "." })
    }

    /// The text of a C string in `buffer`, up to its terminating zero.
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The publisher, or nil when wide-area publishing is off or there is no reachable listener.
    static func makePublisher(
        settings: ServerConfiguration, key: TSIGKey?, listeners: [RPCEndpoint], logger: Logger
    ) -> WideAreaPublisher? {
        let wideArea = settings.wideArea
        guard let domain = wideArea.domain, let server = wideArea.server, let key else { return nil }
        let ports = Advertising.ports(of: listeners)
        guard !ports.isEmpty else {
            logger.notice("No TCP listener reachable from the network; services are not published in DNS")
            return nil
        }
        let addresses = addresses(settings: wideArea, listeners: listeners)
        if addresses.isEmpty {
            logger.warning("No address to publish in DNS; set [WideArea] AdvertiseAddress=", metadata: [LogField.dnsZone: "\(domain)"])
        }
        return WideAreaPublisher(
            configuration: .init(
                domain: domain, server: server, key: key, ttl: wideArea.ttl, lease: wideArea.lease, instanceName: settings.avahi.instanceName,
                hostName: hostLabel(), hostID: WideAreaHostID.current(domain: domain), addresses: addresses, ports: ports, tlsPorts: Advertising.tlsPorts(of: listeners)),
            logger: logger)
    }
}

extension WideAreaPublisher: ServicePublisher {}

/// Several publishers as one (Avahi on the link, DNS UPDATE for the wide area): the same calls to each.
struct PublisherGroup: ServicePublisher {
    let publishers: [any ServicePublisher]

    func start() throws {
        for publisher in publishers { try publisher.start() }
    }

    func publish(_ advertisements: [RPCAdvertisement]) {
        for publisher in publishers { publisher.publish(advertisements) }
    }

    func stop() async {
        await withTaskGroup(of: Void.self) { group in
            for publisher in publishers { group.addTask { await publisher.stop() } }
        }
    }
}
