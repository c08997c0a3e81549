/// What rpcd announces about one service, and how that becomes (and is read back from) DNS-SD records.
///
/// The layout (docs/DISCOVERY.md):
///
///     type     _rpcd._tcp                        every rpcd service, on each TCP listener's port
///     subtype  _calc._sub._rpcd._tcp             browse for one service
///     name     "calc on build-7"                 [Avahi] InstanceName=, default "%s on %h"
///     TXT      txtvers=1  proto=1  service=calc  version=1.0.0  fp=9f2c4e01aa3b7d55  (tls=1 on a TLS listener;
///              http=7380, https=7381 when the instance also serves JSON-RPC over HTTP on those ports)
///
/// Pure data: publishing and browsing are elsewhere (RPCAvahi, RPCDiscovery).
package struct RPCAdvertisement: Hashable, Sendable {
    /// The DNS-SD service type of every rpcd service.
    package static let serviceType = "_rpcd._tcp"
    /// The TXT layout's version: bumped when a key changes meaning, so old clients can tell.
    package static let txtVersion = 1
    /// The longest `version=` value announced; longer module versions are cut here so the record stays small.
    package static let maxVersionBytes = 64

    /// The service name (`calc`), an RFC 6335 name.
    package var service: String
    /// The implementation's version (the module's).
    package var version: String
    /// The interface fingerprint (`RPCServiceDescriptor.fingerprint`): 16 hex digits.
    package var fingerprint: String
    /// The wire-protocol version the daemon speaks (`RPCDaemonVersion.protocolVersion`).
    package var protocolVersion: Int
    /// Whether the listener speaks TLS (`Listen=tls://`), announced as `tls=1`.
    package var tls: Bool
    /// The port of the instance's reachable `http://` listener, if any, announced as `http=PORT`: the other
    /// transport it offers (JSON-RPC over `POST /rpc` and WebSocket, docs/PROTOCOL.md §9).
    package var httpPort: Int?
    /// The same for an `https://` listener, announced as `https=PORT`.
    package var httpsPort: Int?

    package init(
        service: String, version: String, fingerprint: String, protocolVersion: Int, tls: Bool = false,
        httpPort: Int? = nil, httpsPort: Int? = nil
    ) {
        self.service = service
        self.version = version
        self.fingerprint = fingerprint
        self.protocolVersion = protocolVersion
        self.tls = tls
        self.httpPort = httpPort
        self.httpsPort = httpsPort
    }

    /// `_SERVICE._sub._rpcd._tcp`; throws when the service name breaks RFC 6335.
    package func subtype() throws(DNSSDNameError) -> String {
        try DNSSDName.subtype(service, of: Self.serviceType)
    }

    /// The subtype to browse for one service, after checking its name.
    package static func subtype(for service: String) throws(DNSSDNameError) -> String {
        try DNSSDName.subtype(service, of: serviceType)
    }

    /// The TXT record, `txtvers` first as RFC 6763 §6.7 asks.
    package func txtRecord() throws(TXTRecordError) -> DNSSDTXTRecord {
        var entries: [DNSSDTXTRecord.Entry] = [
            .init("txtvers", String(Self.txtVersion)),
            .init("proto", String(protocolVersion)),
            .init("service", service),
            .init("version", DNSSDName.truncated(version, maxBytes: Self.maxVersionBytes)),
            .init("fp", fingerprint),
        ]
        if tls { entries.append(.init("tls", "1")) }
        if let httpPort { entries.append(.init("http", String(httpPort))) }
        if let httpsPort { entries.append(.init("https", String(httpsPort))) }
        return try DNSSDTXTRecord(entries)
    }

    /// Reads a received TXT record back. Nil when it is not an rpcd record this code understands: no
    /// `service=` or `fp=`, or a `txtvers` other than 1. A missing `version=` reads as empty; a missing
    /// `proto=` as 1.
    package init?(txt: DNSSDTXTRecord) {
        guard txt["txtvers"].flatMap({ Int($0) }) == Self.txtVersion,
            let service = txt["service"], !service.isEmpty, let fingerprint = txt["fp"], !fingerprint.isEmpty
        else { return nil }
        self.init(
            service: service, version: txt["version"] ?? "", fingerprint: fingerprint,
            protocolVersion: txt["proto"].flatMap { Int($0) } ?? 1, tls: txt["tls"] == "1",
            httpPort: txt["http"].flatMap { Int($0) }, httpsPort: txt["https"].flatMap { Int($0) })
    }
}
