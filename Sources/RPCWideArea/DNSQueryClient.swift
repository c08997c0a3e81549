package import RPCDNSSD

import CLDNS

/// Unicast DNS queries through ldns's stub resolver: what wide-area browsing asks (PTR, SRV, TXT, A, AAAA).
///
/// The servers are `/etc/resolv.conf`'s, or one given (`rpcctl --dns-server`). Blocking, each query at most
/// `timeout`: call from a thread that may block. A name that does not exist is an empty answer, not an error.
package struct DNSQueryClient: Sendable {
    package var server: DNSServerAddress?
    package var timeout: Duration

    package init(server: DNSServerAddress? = nil, timeout: Duration = .seconds(2)) {
        self.server = server
        self.timeout = timeout
    }

    package struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// The targets of the PTR records at `name`, in presentation format.
    package func pointers(_ name: String) throws(Failure) -> [String] {
        try answers(name, LDNS_RR_TYPE_PTR) { rr in ldns_rr_rdf(rr, 0).map(Self.text) }
    }

    /// The SRV records at `name`: port and target (presentation format).
    package func services(_ name: String) throws(Failure) -> [(port: Int, target: String)] {
        try answers(name, LDNS_RR_TYPE_SRV) { rr in
            guard ldns_rr_rd_count(rr) == 4, let port = ldns_rr_rdf(rr, 2), let target = ldns_rr_rdf(rr, 3) else { return nil }
            return (Int(ldns_rdf2native_int16(port)), Self.text(target))
        }
    }

    /// The strings of the first TXT record at `name`, as bytes.
    package func texts(_ name: String) throws(Failure) -> [[UInt8]] {
        try answers(name, LDNS_RR_TYPE_TXT) { rr -> [[UInt8]]? in
            (0..<ldns_rr_rd_count(rr)).compactMap { index -> [UInt8]? in
                guard let field = ldns_rr_rdf(rr, index), let data = ldns_rdf_data(field) else { return nil }
                let size = ldns_rdf_size(field)
                guard size >= 1 else { return nil }
                // A character-string: a length byte, then the bytes.
                return Array(UnsafeBufferPointer(start: data + 1, count: min(Int(data[0]), size - 1)))
            }
        }.first ?? []
    }

    /// The A and AAAA addresses of `name`, as text.
    package func addresses(_ name: String) throws(Failure) -> [String] {
        try answers(name, LDNS_RR_TYPE_A) { rr in ldns_rr_rdf(rr, 0).map(Self.text) }
            + answers(name, LDNS_RR_TYPE_AAAA) { rr in ldns_rr_rdf(rr, 0).map(Self.text) }
    }

    private func answers<T>(_ name: String, _ type: ldns_rr_type, _ read: (UnsafeMutablePointer<ldns_rr>) -> T?) throws(Failure) -> [T] {
        let resolver = try makeResolver()
        defer { ldns_resolver_deep_free(resolver) }
        guard let owner = ldns_dname_new_frm_str(name) else { throw Failure(description: "'\(name)' is not a domain name") }
        defer { ldns_rdf_deep_free(owner) }
        guard let packet = ldns_resolver_query(resolver, owner, type, LDNS_RR_CLASS_IN, UInt16(LDNS_RD)) else {
            throw Failure(description: "no answer from the DNS server\(server.map { " \($0)" } ?? "s in /etc/resolv.conf") for \(name)")
        }
        defer { ldns_pkt_free(packet) }
        let rcode = Int(ldns_pkt_get_rcode(packet).rawValue)
        guard rcode == 0 || rcode == 3 else {
            throw Failure(description: "the DNS server answered \(DNSResponseCode(rcode)) for \(name)")
        }
        guard let list = ldns_pkt_answer(packet) else { return [] }
        var results: [T] = []
        for index in 0..<ldns_rr_list_rr_count(list) {
            guard let rr = ldns_rr_list_rr(list, index), ldns_rr_get_type(rr) == type else { continue }
            if let value = read(rr) { results.append(value) }
        }
        return results
    }

    private func makeResolver() throws(Failure) -> UnsafeMutablePointer<ldns_resolver> {
        var resolver: UnsafeMutablePointer<ldns_resolver>?
        if let server {
            resolver = ldns_resolver_new()
            guard let resolver, let address = ldns_rdf_new_frm_str(server.isIPv6 ? LDNS_RDF_TYPE_AAAA : LDNS_RDF_TYPE_A, server.address) else {
                throw Failure(description: "'\(server.address)' is not an IP address")
            }
            ldns_resolver_push_nameserver(resolver, address)
            ldns_rdf_deep_free(address)
            ldns_resolver_set_port(resolver, UInt16(server.port))
        } else {
            let status = ldns_resolver_new_frm_file(&resolver, nil)
            guard status == LDNS_STATUS_OK, resolver != nil else {
                throw Failure(description: "cannot read /etc/resolv.conf: \(DNSUpdateClient.status(status))")
            }
        }
        guard let resolver else { throw Failure(description: "out of memory") }
        ldns_resolver_set_retry(resolver, 1)
        let (seconds, attoseconds) = timeout.components
        rpcd_ldns_resolver_set_timeout_ms(resolver, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
        return resolver
    }

    private static func text(_ field: UnsafeMutablePointer<ldns_rdf>) -> String {
        guard let text = ldns_rdf2str(field) else { return "" }
        defer { free(text) }
        return String(cString: text)
    }
}
