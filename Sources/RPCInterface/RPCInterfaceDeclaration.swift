/// A service's interface as a Swift protocol declares it (`@RPCInterface` writes one for each such protocol
/// as its static `rpcInterface`): the service name, a summary and the methods, described exactly as rpcd
/// describes any service, so `rpc.discover` and the fingerprint come out the same wherever it is used.
///
/// The fingerprint is `RPCServiceDescriptor.fingerprint`, the one algorithm rpcd, the module host and the
/// DNS-SD records use: a proxy compares it with the server's, a module exported from the declaration has it.
public struct RPCInterfaceDeclaration: Sendable, Hashable {
    /// The default service name (a handler file may serve the module under another with `Service=`).
    public var service: String
    public var summary: String
    /// In declaration order.
    public var methods: [RPCMethodDescriptor]
    /// The events the service emits (`@RPCInterface(service:events:)`); part of the fingerprint.
    public var events: [RPCEventDescriptor]

    public init(service: String, summary: String, methods: [RPCMethodDescriptor], events: [RPCEventDescriptor] = []) {
        self.service = service
        self.summary = summary
        self.methods = methods
        self.events = events
    }

    /// The descriptor of the service this declares, served as `service` (default: the declared name).
    public func descriptor(service: String? = nil, version: String = "") -> RPCServiceDescriptor {
        RPCServiceDescriptor(
            name: service ?? self.service, version: version, summary: summary, methods: methods, events: events)
    }

    /// The interface fingerprint a server serving this declaration as `service` reports (`rpc.discover`'s
    /// `x-rpcd-services`, `rpcd.info`, the DNS-SD TXT record's `fp`).
    public func fingerprint(service: String? = nil) -> String {
        descriptor(service: service).fingerprint
    }
}
