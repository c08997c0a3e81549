/// The web page an rpcd offers on an HTTP listener (its console), announced the way printers and NAS boxes
/// announce theirs (docs/DISCOVERY.md), so it appears in browsers' and `avahi-browse`'s lists:
///
///     type     _http._tcp (_https._tcp on an https:// listener)
///     name     "rpcd on build-7"                 [Avahi] InstanceName= with %s = rpcd
///     TXT      path=/                            RFC 6763 §6 and the DNS-SD registry's key for _http._tcp
///
/// Pure data, as `RPCAdvertisement`.
package struct RPCWebPageAdvertisement: Hashable, Sendable {
    /// The name `%s` stands for in the instance name.
    package static let serviceName = "rpcd"

    /// The absolute path of the page on the listener (`/`).
    package var path: String
    package var port: Int
    /// Whether the listener is `https://`.
    package var tls: Bool

    package init(path: String, port: Int, tls: Bool) {
        self.path = path
        self.port = port
        self.tls = tls
    }

    /// `_http._tcp`, or `_https._tcp` for TLS.
    package var serviceType: String { tls ? "_https._tcp" : "_http._tcp" }

    package func txtRecord() throws(TXTRecordError) -> DNSSDTXTRecord {
        try DNSSDTXTRecord([.init("path", path)])
    }
}
