import Logging
import RPCAvahi
import RPCConfig
import RPCCore
import RPCDNSSD
import RPCLogging
import RPCModules
import RPCProtocol
import RPCWire

/// What rpcd advertises over DNS-SD, and with which publisher (docs/DISCOVERY.md).
///
/// Only handler services are advertised, each unless its handler says `Advertise=no`. The built-in services
/// (`rpcd`, `rpc`) are not: every rpcd has them, so a record per built-in would only repeat the
/// host list, and any advertised instance's address reaches them anyway (`rpc.discover`, `rpcd.info`).
enum Advertising {
    static func advertisements(for services: [any HandlerService]) -> [RPCAdvertisement] {
        services.filter(\.configuration.advertise).map { service in
            RPCAdvertisement(
                service: service.descriptor.name, version: service.descriptor.version,
                fingerprint: service.descriptor.fingerprint, protocolVersion: RPCDaemonVersion.protocolVersion)
        }.sorted { $0.service < $1.service }
    }

    /// The ports of the TCP listeners (plain or TLS) other machines can reach, in listener order, each once.
    /// Unix sockets and loopback listeners (`127.0.0.1`, `::1`, `localhost`) are not reachable over the
    /// network, so announcing them would only send clients to a dead end.
    static func ports(of listeners: [RPCEndpoint]) -> [Int] {
        var ports: [Int] = []
        for listener in listeners where !listener.isLoopback {
            if let port = listener.tcpAddress?.port, !ports.contains(port) { ports.append(port) }
        }
        return ports
    }

    /// Those of `ports(of:)` that TLS listeners use, announced with `tls=1`.
    static func tlsPorts(of listeners: [RPCEndpoint]) -> Set<Int> {
        Set(listeners.filter { $0.isTLS && !$0.isLoopback }.compactMap { $0.tcpAddress?.port })
    }

    /// The Avahi publisher, or the no-op one when advertising is off or there is nothing to advertise on.
    static func makePublisher(settings: AvahiSettings, listeners: [RPCEndpoint], logger: Logger) -> any ServicePublisher {
        guard settings.enabled else {
            logger.info("DNS-SD advertising is off ([Avahi] Enabled=no)")
            return NoopServicePublisher()
        }
        let ports = ports(of: listeners)
        guard !ports.isEmpty else {
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
                    ports: ports, tlsPorts: tlsPorts(of: listeners), instanceName: settings.instanceName, interfaces: settings.interfaces, ipProtocol: ipProtocol),
                logger: logger)
        } catch {
            logger.error("Cannot set up Avahi; services are not advertised", metadata: [LogField.error: "\(error)"])
            return NoopServicePublisher()
        }
    }
}
