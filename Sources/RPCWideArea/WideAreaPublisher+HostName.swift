import Logging
import RPCDNSSD
import RPCLogging

/// The host's own name in the zone and the other hosts' leases: holding `HOST.DOMAIN` (its addresses and
/// lease, renamed on a collision) and sweeping what dead hosts left. On the publisher's queue, like the rest
/// of its loop.
extension WideAreaPublisher {
    /// Writes the host's addresses and lease (`WideAreaLease`) at `HOST.DOMAIN`: replacing the lease record it
    /// wrote last round (prerequisite: still there), else claiming the name (see the type's comment). False when
    /// the server did not take it; the round is then retried.
    func holdHost() -> Bool {
        let lease = WideAreaLease(duration: configuration.lease, from: WideAreaLease.nextSecond(), owner: configuration.hostID)
        func changes(_ label: String) -> [DNSChange] {
            let host = records.hostName(label)
            return ["A", "AAAA", "TXT"].map { .deleteRRSet(name: host, type: $0) }
                + records.addresses(host: label, configuration.addresses).map { .add($0) }
                + [.add(records.lease(host: label, lease))]
        }
        if let previous = zone.leaseRecord {
            switch send([.recordExists(previous)], changes(zone.hostLabel), context: hostContext) {
            case .noError?:
                zone.leaseRecord = records.lease(host: zone.hostLabel, lease)
                return true
            case .nxRRSet?:
                zone.leaseRecord = nil  // gone: the server lost it, a sweeper took it (clocks?), or by hand
            default:
                return false
            }
        }
        var label = zone.hostLabel
        var alternative = 2
        for _ in 0..<32 {
            let host = records.hostName(label)
            var answer = send([.recordSetAbsent(name: host, type: "TXT")], changes(label), context: [LogField.host: "\(label)"])
            if answer == .yxRRSet {
                guard let texts = try? DNSQueryClient(server: configuration.server).texts(host) else { return false }
                if let held = WideAreaLease(txt: texts), held.owner == configuration.hostID || held.isExpired(at: WideAreaLease.now()) {
                    // A dead machine's: its instances are swept first (that removes the name too, when any
                    // pointed at it). Then, or if it is this machine's from a run killed before it could
                    // withdraw, the name is taken over, guarded by the lease as read.
                    if held.owner != configuration.hostID { sweep(own: "") }
                    let asRead = DNSRecord(owner: host, ttl: 0, type: "TXT", data: WideAreaRecords.text(texts))
                    answer = send([.recordExists(asRead)], changes(label), context: [LogField.host: "\(label)"])
                } else {
                    let next = DNSSDName.truncated(configuration.hostName, maxBytes: DNSSDName.maxLabelBytes - 4) + "-\(alternative)"
                    alternative += 1
                    logger.warning(
                        "Host name taken in DNS by another machine; using an alternative name",
                        metadata: fields.merging([LogField.host: "\(next)", LogField.collision: "network"]) { $1 })
                    label = next
                    continue
                }
            }
            switch answer {
            case .noError?:
                if label != zone.hostLabel {
                    // Instances point at the old name: withdrawn here, claimed again under the new one.
                    for (key, instance) in zone.instances where withdraw(instance) { zone.instances[key] = nil }
                    zone.hostLabel = label
                }
                zone.leaseRecord = records.lease(host: label, lease)
                return true
            case .yxRRSet?, .nxRRSet?:
                continue  // changed between the two updates: look again
            default:
                return false
            }
        }
        logger.error("Cannot hold a host name in DNS: every alternative is taken", metadata: fields.merging(hostContext) { $1 })
        return false
    }

    var hostContext: Logger.Metadata { [LogField.host: "\(zone.hostLabel)"] }

    /// Deletes the records of other hosts whose lease passed (`WideAreaSweep`), asking the primary server
    /// itself: a resolver's cache could hold a lease already refreshed. Nothing to do is the usual case; a
    /// failed query waits for the next round.
    func sweep(own: String? = nil) {
        let browser = WideAreaBrowser(domain: configuration.domain, client: DNSQueryClient(server: configuration.server))
        guard let found = try? browser.scan(type: RPCAdvertisement.serviceType, addresses: false) else { return }
        let now = WideAreaLease.now()
        for expired in WideAreaSweep.expired(found, at: now, own: own ?? records.hostName(zone.hostLabel), records: records) {
            let (prerequisites, changes) = WideAreaSweep.removal(expired, records: records)
            let metadata: Logger.Metadata = [
                LogField.host: "\(expired.target)", LogField.leaseExpires: "\(expired.lease.expires)",
            ]
            // NXRRSET: the host refreshed its lease meanwhile, or another publisher swept it first.
            if send(prerequisites, changes, context: metadata) == .noError {
                logger.notice("Expired wide-area records removed", metadata: fields.merging(metadata) { $1 })
            }
        }
    }
}
