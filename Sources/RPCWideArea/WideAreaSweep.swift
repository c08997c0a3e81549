import RPCDNSSD

/// Removing what a host left in the zone when its lease (`WideAreaLease`) passed: a `kill -9`, a power cut, a
/// host that never came back. Every rpcd publishing in the zone sweeps it after each refresh
/// (`WideAreaPublisher`), so the records go as long as one publisher lives, with no server support.
///
/// Pure: what to delete, as one UPDATE per expired host; `WideAreaPublisher` finds the instances and sends it.
package enum WideAreaSweep {
    /// A host whose lease passed, and the instances whose SRV record points at it.
    package struct Expired: Hashable, Sendable {
        /// The host's name, absolute, as the SRV records give it.
        package var target: String
        package var lease: WideAreaLease
        package var instances: [WideAreaBrowser.Instance]
    }

    /// The hosts among `instances` whose lease passed at `now` (Unix seconds), other than `own` (the sweeper's
    /// own name, whose lease it refreshes itself) and names outside `records`' zone. Hosts without a lease are
    /// never expired: rpcd deletes only what another rpcd leased.
    package static func expired(_ instances: [WideAreaBrowser.Instance], at now: Int, own: String, records: WideAreaRecords) -> [Expired] {
        var byTarget: [String: Expired] = [:]
        let zone = "." + records.domain.lowercased()
        for instance in instances {
            let target = DNSPresentation.absolute(instance.target).lowercased()
            guard let lease = instance.lease, lease.isExpired(at: now), target != own.lowercased(), target.hasSuffix(zone) else { continue }
            byTarget[target, default: Expired(target: target, lease: lease, instances: [])].instances.append(instance)
        }
        return byTarget.values.sorted { $0.target < $1.target }
    }

    /// The update removing an expired host. Its one prerequisite is the lease record exactly as it was read:
    /// a host that came back and refreshed its lease in between keeps everything (the server answers NXRRSET
    /// and changes nothing), so a sweep can never delete live records, however late it runs. The changes: each
    /// instance's PTR records (the type's and its service's subtype, by data, so other instances' stay), SRV
    /// and TXT; then the host's A, AAAA and lease.
    package static func removal(_ expired: Expired, records: WideAreaRecords) -> (prerequisites: [DNSPrerequisite], changes: [DNSChange]) {
        let lease = DNSRecord(owner: expired.target, ttl: 0, type: "TXT", data: WideAreaRecords.text(expired.lease.txt))
        var changes: [DNSChange] = []
        for instance in expired.instances {
            let owner = DNSPresentation.absolute(instance.owner)
            changes.append(.delete(DNSRecord(owner: records.serviceTypeName, ttl: 0, type: "PTR", data: owner)))
            if let service = DNSSDTXTRecord(parsing: instance.txt)["service"], let subtype = records.subtypeName(service) {
                changes.append(.delete(DNSRecord(owner: subtype, ttl: 0, type: "PTR", data: owner)))
            }
            changes += [.deleteRRSet(name: owner, type: "SRV"), .deleteRRSet(name: owner, type: "TXT")]
        }
        changes += ["A", "AAAA", "TXT"].map { .deleteRRSet(name: expired.target, type: $0) }
        return ([.recordExists(lease)], changes)
    }
}
