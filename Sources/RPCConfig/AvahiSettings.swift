package import RPCDNSSD

/// `[Avahi]`: whether and how rpcd advertises its services over DNS-SD (docs/DISCOVERY.md).
package struct AvahiSettings: Hashable, Sendable {
    /// `Enabled=`: advertise through avahi-daemon. With `no`, rpcd never talks to Avahi.
    package var enabled: Bool
    /// `InstanceName=`: the instance name template, `%s on %h` by default.
    package var instanceName: DNSSDInstanceNameTemplate
    /// `Interfaces=`: network interfaces to advertise on; empty means all.
    package var interfaces: [String]
    /// `Protocols=`: the address families the records are published over.
    package var protocols: IPProtocols

    package enum IPProtocols: String, CaseIterable, Hashable, Sendable {
        case ipv4
        case ipv6
        case any
    }

    package init(
        enabled: Bool = true, instanceName: DNSSDInstanceNameTemplate = .default, interfaces: [String] = [],
        protocols: IPProtocols = .any
    ) {
        self.enabled = enabled
        self.instanceName = instanceName
        self.interfaces = interfaces
        self.protocols = protocols
    }
}
