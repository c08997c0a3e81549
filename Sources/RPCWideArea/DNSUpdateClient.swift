package import RPCDNSSD

import CLDNS

/// Sends DNS UPDATEs (RFC 2136) signed with a TSIG key (RFC 8945) to one server, over TCP, through ldns.
///
/// Blocking: each `send` waits for the answer, at most `timeout` (connect and read). Call it from a thread
/// that may block (`WideAreaPublisher` has a queue of its own), never from an event loop. Every update is
/// signed; an answer whose signature does not verify is treated as no answer, so a forged "NOERROR" is not
/// believed.
package struct DNSUpdateClient: Sendable {
    package var server: DNSServerAddress
    package var key: TSIGKey
    package var timeout: Duration

    package init(server: DNSServerAddress, key: TSIGKey, timeout: Duration = .seconds(3)) {
        self.server = server
        self.key = key
        self.timeout = timeout
    }

    /// What the server answered.
    package struct Answer: Hashable, Sendable {
        package var rcode: DNSResponseCode
        /// The TSIG error of the answer, when it carries one other than 0 (BADSIG, BADKEY, BADTIME).
        package var tsigError: DNSResponseCode?
        /// The lease the server granted (RFC 9664 §4.2), when it implements Update Leases; nil from BIND 9.
        package var grantedLease: Int? = nil
    }

    /// The update could not be made or no (verifiable) answer came.
    package struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// Sends one update of `zone`; the answer's code says whether it was applied (NOERROR) or why not. With a
    /// `lease` (seconds), the update carries the EDNS Update Lease option (RFC 9664), which a server that
    /// implements it honours by deleting the update's records when the lease passes unrenewed (BIND 9 ignores
    /// it; `WideAreaLease` is what expires records there).
    package func send(zone: String, prerequisites: [DNSPrerequisite], changes: [DNSChange], lease: Int? = nil) throws(Failure) -> Answer {
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
        let packet = try signedUpdate(zone: zone, prerequisites: prerequisites, changes: changes, lease: lease)
        defer { ldns_pkt_free(packet) }

        // Sent by hand rather than with ldns_resolver_send_pkt, which drops an answer it cannot verify: a
        // server that does not accept the key answers unsigned (RFC 8945 §5.2), and that answer is what
        // the administrator needs to see.
        guard let query = ldns_buffer_new(Int(LDNS_MAX_PACKETLEN)) else { throw Failure(description: "out of memory") }
        defer { ldns_buffer_free(query) }
        let written = ldns_pkt2buffer_wire(query, packet)
        guard written == LDNS_STATUS_OK else { throw Failure(description: "cannot write the update: \(Self.status(written))") }
        guard let serverRdf = ldns_rdf_new_frm_str(server.isIPv6 ? LDNS_RDF_TYPE_AAAA : LDNS_RDF_TYPE_A, server.address) else {
            throw Failure(description: "'\(server.address)' is not an IP address")
        }
        defer { ldns_rdf_deep_free(serverRdf) }
        var addressSize = 0
        guard let socketAddress = ldns_rdf2native_sockaddr_storage(serverRdf, UInt16(server.port), &addressSize) else {
            throw Failure(description: "'\(server.address)' is not an IP address")
        }
        defer { free(socketAddress) }
        var wire: UnsafeMutablePointer<UInt8>?
        var wireSize = 0
        let sent = rpcd_ldns_tcp_send(&wire, query, socketAddress, socklen_t(addressSize), milliseconds, &wireSize)
        defer { free(wire) }
        guard sent == LDNS_STATUS_OK, let wire, wireSize > 0 else {
            throw Failure(description: "no answer from \(server): \(Self.status(sent))")
        }
        var received: UnsafeMutablePointer<ldns_pkt>?
        let parsed = ldns_wire2pkt(&received, wire, wireSize)
        guard parsed == LDNS_STATUS_OK, let answer = received else {
            throw Failure(description: "unreadable answer from \(server): \(Self.status(parsed))")
        }
        defer { ldns_pkt_free(answer) }
        let rcode = DNSResponseCode(Int(ldns_pkt_get_rcode(answer).rawValue))
        var tsigError: DNSResponseCode?
        if let tsig = ldns_pkt_tsig(answer), ldns_rr_rd_count(tsig) > 5, let field = ldns_rr_rdf(tsig, 5) {
            let value = Int(ldns_rdf2native_int16(field))
            if value != 0 { tsigError = DNSResponseCode(value) }
        }
        // An answer that changes what rpcd does next (applied, name taken, records gone) is believed only when
        // its signature verifies, so nobody on the path can forge one. Refusals may come unsigned: believing a
        // forged one costs a retry.
        if [.noError, .yxDomain, .yxRRSet, .nxRRSet].contains(rcode) {
            let mac = ldns_pkt_tsig(packet).flatMap { ldns_rr_rdf($0, 3) }
            guard ldns_pkt_tsig_verify(answer, wire, wireSize, key.name, key.secret, mac) != 0 else {
                throw Failure(description: "the answer from \(server) is not signed with the key '\(key.name)'; ignored")
            }
        }
        return Answer(rcode: rcode, tsigError: tsigError, grantedLease: Self.grantedLease(answer))
    }

    /// The update as it goes on the wire, signed: what `send` sends (tests read it).
    package func wire(zone: String, prerequisites: [DNSPrerequisite], changes: [DNSChange], lease: Int? = nil) throws(Failure) -> [UInt8] {
        let packet = try signedUpdate(zone: zone, prerequisites: prerequisites, changes: changes, lease: lease)
        defer { ldns_pkt_free(packet) }
        var wire: UnsafeMutablePointer<UInt8>?
        var size = 0
        guard ldns_pkt2wire(&wire, packet, &size) == LDNS_STATUS_OK, let wire else { throw Failure(description: "cannot write the update") }
        defer { free(wire) }
        return Array(UnsafeBufferPointer(start: wire, count: size))
    }

    /// The LEASE of an Update Lease option in the answer's OPT record, if any.
    private static func grantedLease(_ answer: UnsafeMutablePointer<ldns_pkt>) -> Int? {
        guard let options = ldns_pkt_edns_data(answer), let data = ldns_rdf_data(options) else { return nil }
        return Self.updateLease(in: Array(UnsafeBufferPointer(start: data, count: ldns_rdf_size(options))))
    }

    /// The LEASE field of the first Update Lease option among EDNS options (code, length, data; RFC 6891 §6.1.2).
    package static func updateLease(in options: [UInt8]) -> Int? {
        var rest = options[...]
        while rest.count >= 4 {
            let code = UInt16(rest[rest.startIndex]) << 8 | UInt16(rest[rest.startIndex + 1])
            let length = Int(rest[rest.startIndex + 2]) << 8 | Int(rest[rest.startIndex + 3])
            rest = rest.dropFirst(4)
            guard rest.count >= length else { return nil }
            if code == updateLeaseOption, length >= 4 {
                return rest.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            }
            rest = rest.dropFirst(length)
        }
        return nil
    }

    /// RFC 9664 §4: EDNS option 2, the lease in seconds (4 bytes; rpcd sends no separate KEY-LEASE).
    static let updateLeaseOption: UInt16 = 2

    private func signedUpdate(zone: String, prerequisites: [DNSPrerequisite], changes: [DNSChange], lease: Int?) throws(Failure) -> UnsafeMutablePointer<ldns_pkt> {
        // The resolver only carries the key to ldns_update_pkt_tsig_add; sending is done by `send`.
        guard let resolver = ldns_resolver_new() else { throw Failure(description: "out of memory") }
        defer { ldns_resolver_deep_free(resolver) }
        ldns_resolver_set_tsig_keyname(resolver, key.name)
        ldns_resolver_set_tsig_algorithm(resolver, key.algorithm.dnsName)
        ldns_resolver_set_tsig_keydata(resolver, key.secret)
        let prerequisiteList = ldns_rr_list_new()
        let changeList = ldns_rr_list_new()
        defer {
            ldns_rr_list_deep_free(prerequisiteList)
            ldns_rr_list_deep_free(changeList)
        }
        for prerequisite in prerequisites {
            let rr: UnsafeMutablePointer<ldns_rr>
            switch prerequisite {
            case .nameNotInUse(let name):
                rr = try Self.emptyRecord(name: name, type: LDNS_RR_TYPE_ANY, class: LDNS_RR_CLASS_NONE)
            case .recordExists(let record):
                rr = try Self.record(record)
                ldns_rr_set_ttl(rr, 0)
            case .recordSetAbsent(let name, let type):
                rr = try Self.emptyRecord(name: name, type: ldns_get_rr_type_by_name(type), class: LDNS_RR_CLASS_NONE)
            }
            ldns_rr_list_push_rr(prerequisiteList, rr)
        }
        for change in changes {
            let rr: UnsafeMutablePointer<ldns_rr>
            switch change {
            case .add(let record):
                rr = try Self.record(record)
            case .delete(let record):
                rr = try Self.record(record)
                ldns_rr_set_class(rr, LDNS_RR_CLASS_NONE)
                ldns_rr_set_ttl(rr, 0)
            case .deleteRRSet(let name, let type):
                rr = try Self.emptyRecord(name: name, type: ldns_get_rr_type_by_name(type), class: LDNS_RR_CLASS_ANY)
            }
            ldns_rr_list_push_rr(changeList, rr)
        }
        guard let zoneName = ldns_dname_new_frm_str(DNSPresentation.absolute(zone)) else {
            throw Failure(description: "'\(zone)' is not a domain name")
        }
        // ldns_update_pkt_new takes the zone's name and copies the lists.
        guard let packet = ldns_update_pkt_new(zoneName, LDNS_RR_CLASS_IN, prerequisiteList, changeList, nil) else {
            throw Failure(description: "cannot build the update")
        }
        if let lease {
            // Before signing: the TSIG covers the OPT record too.
            var option = [UInt8]()
            for value in [Int(Self.updateLeaseOption), 4] { option += [UInt8(value >> 8), UInt8(value & 0xFF)] }
            let seconds = UInt32(clamping: lease)
            option += [UInt8(seconds >> 24), UInt8((seconds >> 16) & 0xFF), UInt8((seconds >> 8) & 0xFF), UInt8(seconds & 0xFF)]
            ldns_pkt_set_edns_udp_size(packet, 1232)
            ldns_pkt_set_edns_data(packet, ldns_rdf_new_frm_data(LDNS_RDF_TYPE_UNKNOWN, option.count, option))
        }
        let signed = ldns_update_pkt_tsig_add(packet, resolver)
        guard signed == LDNS_STATUS_OK else {
            ldns_pkt_free(packet)
            throw Failure(description: "cannot sign the update: \(Self.status(signed))")
        }
        return packet
    }


    private static func record(_ record: DNSRecord) throws(Failure) -> UnsafeMutablePointer<ldns_rr> {
        var rr: UnsafeMutablePointer<ldns_rr>?
        let status = ldns_rr_new_frm_str(&rr, record.description, 0, nil, nil)
        guard status == LDNS_STATUS_OK, let rr else {
            throw Failure(description: "cannot read the record '\(record)': \(Self.status(status))")
        }
        return rr
    }

    /// A record with a name, type and class and no data: the form RFC 2136 gives "delete an RRset" and "name
    /// not in use".
    private static func emptyRecord(name: String, type: ldns_rr_type, class rrClass: ldns_rr_class) throws(Failure) -> UnsafeMutablePointer<ldns_rr> {
        guard let owner = ldns_dname_new_frm_str(name), let rr = ldns_rr_new() else {
            throw Failure(description: "'\(name)' is not a domain name")
        }
        ldns_rr_set_owner(rr, owner)
        ldns_rr_set_type(rr, type)
        ldns_rr_set_class(rr, rrClass)
        ldns_rr_set_ttl(rr, 0)
        return rr
    }

    static func status(_ status: ldns_status) -> String {
        ldns_get_errorstr_by_id(status).map { String(cString: $0) } ?? "ldns status \(status.rawValue)"
    }
}
