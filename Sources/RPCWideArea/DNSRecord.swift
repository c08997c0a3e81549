/// One resource record in presentation format: what goes into an UPDATE, and what `dig` prints back.
package struct DNSRecord: Hashable, Sendable, CustomStringConvertible {
    /// The owner name, absolute (ends in a dot), escaped (`DNSPresentation`).
    package var owner: String
    package var ttl: Int
    /// `PTR`, `SRV`, `TXT`, `A`, `AAAA`.
    package var type: String
    /// The RDATA as a zone file writes it.
    package var data: String

    package init(owner: String, ttl: Int, type: String, data: String) {
        self.owner = owner
        self.ttl = ttl
        self.type = type
        self.data = data
    }

    /// The record as one zone-file line, which ldns parses.
    package var description: String { "\(owner) \(ttl) IN \(type) \(data)" }
}

/// What an UPDATE asks the server to check first (RFC 2136 §2.4): the update is applied only if all hold.
package enum DNSPrerequisite: Hashable, Sendable {
    /// No record of any type has this name (NXDOMAIN otherwise: YXDOMAIN).
    case nameNotInUse(String)
    /// This exact record exists, with these data (NXRRSET otherwise).
    case recordExists(DNSRecord)
    /// No record of `type` has this name (YXRRSET otherwise).
    case recordSetAbsent(name: String, type: String)
}

/// One change of an UPDATE (RFC 2136 §2.5).
package enum DNSChange: Hashable, Sendable {
    case add(DNSRecord)
    /// Deletes this one record (the data must match).
    case delete(DNSRecord)
    /// Deletes every record of `type` at `name`.
    case deleteRRSet(name: String, type: String)
}
