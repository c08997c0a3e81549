import Logging
import RPCAvahi
import RPCConfig
import RPCCore
package import RPCDNSSD
import RPCLogging
package import RPCModules
import RPCProtocol

/// What rpcd advertises over DNS-SD, and with which publisher (docs/DISCOVERY.md).
///
/// Only handler services are advertised, each unless its handler says `Advertise=no`. The built-in services
/// (`rpcd`, `rpc`) are not: every rpcd has them, so a record per built-in would only repeat the
/// host list, and any advertised instance's address reaches them anyway (`rpc.discover`, `rpcd.info`).
package enum Advertising {
    package static func advertisements(for services: [any HandlerService]) -> [RPCAdvertisement] {
        services.filter(\.configuration.advertise).map { service in
            RPCAdvertisement(
                service: service.descriptor.name, version: service.descriptor.version,
                fingerprint: service.descriptor.fingerprint, protocolVersion: RPCDaemonVersion.protocolVersion)
        }.sorted { $0.service < $1.service }
    }

    /// The ports of the framed TCP listeners (plain or TLS) other machines can reach, in listener order, each
    /// once: the `_rpcd._tcp` records'. Unix sockets and loopback listeners (`127.0.0.1`, `::1`, `localhost`)
    /// are not reachable over the network, so announcing them would only send clients to a dead end; HTTP
    /// listeners are named in the records' TXT instead (`httpPort(of:)`), since a framed client cannot use them.
    static func ports(of listeners: [RPCEndpoint]) -> [Int] {
        var ports: [Int] = []
        for listener in listeners where !listener.isLoopback && !listener.isHTTP {
            if let port = listener.tcpAddress?.port, !ports.contains(port) { ports.append(port) }
        }
        return ports
    }

    /// Those of `ports(of:)` that TLS listeners use, announced with `tls=1`.
    static func tlsPorts(of listeners: [RPCEndpoint]) -> Set<Int> {
        Set(listeners.filter { $0.isTLS && !$0.isHTTP && !$0.isLoopback }.compactMap { $0.tcpAddress?.port })
    }

    /// The port of the first reachable `http://` (or, with `tls`, `https://`) listener.
    static func httpPort(of listeners: [RPCEndpoint], tls: Bool) -> Int? {
        listeners.first { $0.isHTTP && $0.isTLS == tls && !$0.isLoopback }?.tcpAddress?.port
    }

    /// The web page to announce as `_http._tcp` (`_https._tcp`): `path` on the first reachable HTTP listener,
    /// `https://` preferred; nil when nothing is served at a page's path or no HTTP listener is reachable.
    static func webPage(path: String?, listeners: [RPCEndpoint]) -> RPCWebPageAdvertisement? {
        guard let path else { return nil }
        if let port = httpPort(of: listeners, tls: true) { return RPCWebPageAdvertisement(path: path, port: port, tls: true) }
        if let port = httpPort(of: listeners, tls: false) { return RPCWebPageAdvertisement(path: path, port: port, tls: false) }
        return nil
    }

    /// The Avahi publisher, or the no-op one when advertising is off or there is nothing to advertise on.
    /// `webPagePath` is the path of the page HTTP listeners serve for people (the console), if any.
    static func makePublisher(
        settings: AvahiSettings, listeners: [RPCEndpoint], webPagePath: String? = nil, logger: Logger
    ) -> any ServicePublisher {
        guard settings.enabled else {
            logger.info("DNS-SD advertising is off ([Avahi] Enabled=no)")
            return NoopServicePublisher()
        }
        let ports = ports(of: listeners)
        let webPage = webPage(path: webPagePath, listeners: listeners)
        guard !ports.isEmpty || webPage != nil else {
            logger.notice("No TCP listener reachable from the network; services are not advertised over DNS-SD")
            return NoopServicePublisher()
        }
        let ipProtocol: AvahiServicePublisher.IPProtocol =
            switch settings.protocols {
            case .ipv4: .ipv4
            case .ipv6: .ipv6
            case .any: .any
            }
        do {
            return try AvahiServicePublisher(
                configuration: .init(
                    ports: ports, tlsPorts: tlsPorts(of: listeners), httpPort: httpPort(of: listeners, tls: false),
                    httpsPort: httpPort(of: listeners, tls: true), webPage: webPage, instanceName: settings.instanceName,
                    interfaces: settings.interfaces, ipProtocol: ipProtocol),
                logger: logger)
        } catch {
            logger.error("Cannot set up Avahi; services are not advertised", metadata: [LogField.error: "\(error)"])
            return NoopServicePublisher()
        }
    }
}
