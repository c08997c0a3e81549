import Dispatch
package import Logging
package import RPCDNSSD
import RPCLogging
import Synchronization

/// Publishes rpcd's services in a unicast DNS zone by signed DNS UPDATE (docs/DISCOVERY.md, "Across
/// subnets"): the same records as on the link (`WideAreaRecords`), refreshed, withdrawn and renamed the way
/// avahi-daemon does it on the link.
///
/// - **Holding the host name** `HOST.DOMAIN` (its A/AAAA records and lease) is the same: its lease record
///   names the machine (`WideAreaHostID`). Free, this machine's, or a dead machine's (lease passed: swept
///   first), it is taken; another live machine's, and the host is renamed `h1-2`, as avahi-daemon renames a
///   host whose name is taken on the link (instances then say `calc on h1-2`).
/// - **Claiming** an instance name is an update with the prerequisite "this name is not in use": it
///   succeeds only if nobody has it. If the name exists but its SRV record is this host's (left from a
///   previous run of this rpcd, killed before it could withdraw), it is taken back; otherwise the name
///   belongs to another host and the instance is renamed (`calc on h1 #2`), as on mDNS.
/// - **Refreshing** re-sends the records every `refreshInterval` (half the lease), with the prerequisite that
///   this host's SRV record is still there. A server restarted without its journal, or records deleted
///   by hand, fail that prerequisite: the instance is claimed again. An unreachable server is retried
///   after 1 s, doubling up to the refresh interval. Each refresh starts with the host's own records: its
///   addresses and its lease (`WideAreaLease`, `lease` seconds from now), every update asking for an RFC 9664
///   Update Lease as well.
/// - **Sweeping**: after each refresh, the records of other hosts whose lease passed (killed, never back) are
///   deleted (`WideAreaSweep`), guarded by their lease record as read, so a host that refreshed in between
///   keeps them.
/// - **Withdrawing** (a service gone after a reload, or `stop()`) deletes the records, again only if the
///   SRV record is still this host's, so rpcd never deletes another host's instance.
///
/// Threads: the DNS exchanges block, so they run on a serial queue of the publisher's own; `publish` and
/// `stop` only hand work to it. Failures are logged (`LogField.dnsRcode`, `LogField.tsigError`) and
/// retried; they never stop rpcd.
package final class WideAreaPublisher: Sendable {
    package struct Configuration: Sendable {
        package var domain: String
        package var server: DNSServerAddress
        package var key: TSIGKey
        package var ttl: Int
        /// Seconds a host's records stand without a refresh (`[WideArea] Lease=`, `WideAreaLease`).
        package var lease: Int
        package var instanceName: DNSSDInstanceNameTemplate
        /// The host's label in the zone (`%h`, and the SRV target `HOST.DOMAIN`), before any renaming.
        package var hostName: String
        /// This machine in lease records (`WideAreaHostID`).
        package var hostID: String
        /// The A/AAAA records of `HOST.DOMAIN`.
        package var addresses: [String]
        /// The ports of the reachable TCP listeners, first one without a suffix in the instance name.
        package var ports: [Int]
        package var tlsPorts: Set<Int>

        package init(
            domain: String, server: DNSServerAddress, key: TSIGKey, ttl: Int, lease: Int, instanceName: DNSSDInstanceNameTemplate,
            hostName: String, hostID: String, addresses: [String], ports: [Int], tlsPorts: Set<Int>
        ) {
            self.domain = domain
            self.server = server
            self.key = key
            self.ttl = ttl
            self.lease = lease
            self.instanceName = instanceName
            self.hostName = hostName
            self.hostID = hostID
            self.addresses = addresses
            self.ports = ports
            self.tlsPorts = tlsPorts
        }

        /// Half the lease, at least a second: a live host's lease always has half of it left, the margin for
        /// a slow update and for clocks that disagree.
        package var refreshInterval: Duration { .seconds(max(1, lease / 2)) }
    }

    private struct Shared {
        var desired: [RPCAdvertisement] = []
        var running = false
        var stopping = false
        var stopped: [CheckedContinuation<Void, Never>] = []
        var finished = false
    }

    /// What is in the zone now, as this publisher put it there; touched on `queue` only.
    final class Zone: @unchecked Sendable {
        struct Instance {
            var name: String
            var advertisement: RPCAdvertisement
            var port: Int
            var records: [DNSRecord]
        }
        var instances: [String: Instance] = [:]
        var serverAnswering = true
        var grantedLeaseLogged = false
        /// The host's label in use: `hostName`, or its alternative after a collision.
        var hostLabel = ""
        /// The lease record this publisher wrote last, while it holds the host name.
        var leaseRecord: DNSRecord?
    }

    package let configuration: Configuration
    let records: WideAreaRecords
    private let client: DNSUpdateClient
    let logger: Logger
    private let shared = Mutex(Shared())
    private let wake = DispatchSemaphore(value: 0)
    private let queue = DispatchQueue(label: "rpcd.widearea.publisher")
    let zone = Zone()

    package init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.records = WideAreaRecords(domain: configuration.domain, ttl: configuration.ttl)
        self.client = DNSUpdateClient(server: configuration.server, key: configuration.key)
        self.logger = logger
        zone.hostLabel = configuration.hostName
    }

    var fields: Logger.Metadata {
        [LogField.dnsServer: "\(configuration.server)", LogField.dnsZone: "\(configuration.domain)",
         LogField.tsigKey: "\(configuration.key.name)"]
    }

    /// Starts the publishing loop (once).
    package func start() {
        let first = shared.withLock { shared in
            defer { shared.running = true }
            return !shared.running
        }
        guard first else { return }
        logger.info("Wide-area DNS-SD publishing", metadata: fields.merging([LogField.host: "\(configuration.hostName)"]) { $1 })
        queue.async { self.loop() }
    }

    /// The services to publish from now on.
    package func publish(_ advertisements: [RPCAdvertisement]) {
        shared.withLock { $0.desired = advertisements }
        wake.signal()
    }

    /// Withdraws every record (waiting for the server's answers, each at most the client's timeout) and
    /// ends the loop. Idempotent.
    package func stop() async {
        let wasRunning = shared.withLock { shared in
            shared.stopping = true
            return shared.running
        }
        guard wasRunning else { return }
        wake.signal()
        await withCheckedContinuation { continuation in
            let done = shared.withLock { shared in
                if !shared.finished { shared.stopped.append(continuation) }
                return shared.finished
            }
            if done { continuation.resume() }
        }
    }

    // MARK: - The loop, on `queue`

    private func loop() {
        var retry = Duration.seconds(1)
        while true {
            let (desired, stopping) = shared.withLock { ($0.desired, $0.stopping) }
            if stopping { break }
            let started = ContinuousClock.now
            let ok = reconcile(desired)
            if ok { sweep() }
            // From the round's start, when the lease was written: a slow round does not eat into its margin.
            let wait = ok ? max(.zero, configuration.refreshInterval - (ContinuousClock.now - started)) : retry
            retry = ok ? .seconds(1) : min(retry * 2, configuration.refreshInterval)
            let (seconds, attoseconds) = wait.components
            _ = wake.wait(timeout: .now() + .milliseconds(Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)))
        }
        for (key, instance) in zone.instances where withdraw(instance) {
            zone.instances[key] = nil
        }
        if let lease = zone.leaseRecord {
            // Only while the name is still this host's: never another machine's that took it meanwhile.
            let host = records.hostName(zone.hostLabel)
            _ = send([.recordExists(lease)], ["A", "AAAA", "TXT"].map { .deleteRRSet(name: host, type: $0) }, context: hostContext)
        }
        let waiting = shared.withLock { shared in
            shared.finished = true
            defer { shared.stopped = [] }
            return shared.stopped
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Brings the zone in line with `desired`; false when something failed and should be retried soon.
    private func reconcile(_ desired: [RPCAdvertisement]) -> Bool {
        var wanted: [String: (RPCAdvertisement, Int)] = [:]
        for advertisement in desired {
            for port in configuration.ports {
                var announced = advertisement
                announced.tls = configuration.tlsPorts.contains(port)
                wanted["\(advertisement.service)/\(port)"] = (announced, port)
            }
        }
        var ok = true
        for (key, instance) in zone.instances where wanted[key] == nil {
            if withdraw(instance) { zone.instances[key] = nil } else { ok = false }
        }
        guard !wanted.isEmpty else { return ok }
        guard holdHost() else { return false }
        for (key, (advertisement, port)) in wanted.sorted(by: { $0.key < $1.key }) {
            if let instance = zone.instances[key] {
                if refresh(instance, advertisement: advertisement) { continue }
                zone.instances[key] = nil
            }
            if let instance = claim(advertisement, port: port) { zone.instances[key] = instance } else { ok = false }
        }
        return ok
    }

    /// Re-sends an instance's records (the TXT replaced when the advertisement changed), if it is still ours.
    private func refresh(_ instance: Zone.Instance, advertisement: RPCAdvertisement) -> Bool {
        guard let current = records.service(instance: instance.name, advertisement: advertisement, host: zone.hostLabel, port: instance.port),
              let srv = current.first(where: { $0.type == "SRV" })
        else { return false }
        var changes: [DNSChange] = []
        if advertisement != instance.advertisement {
            changes.append(.deleteRRSet(name: records.instanceName(instance.name), type: "TXT"))
        }
        changes += current.map { .add($0) }
        let answer = send([.recordExists(srv)], changes, context: context(advertisement, instance.name))
        if answer == .noError, advertisement != instance.advertisement {
            zone.instances["\(advertisement.service)/\(instance.port)"]?.advertisement = advertisement
            logger.notice("Wide-area advertisement updated", metadata: context(advertisement, instance.name).merging([LogField.fingerprint: "\(advertisement.fingerprint)"]) { $1 })
        }
        // NXRRSET: the records are gone (server restarted empty, deleted by hand): claim again.
        return answer != .nxRRSet && answer != nil
    }

    /// Takes an instance name for the service: the template's, else `NAME #2`, `NAME #3`...
    private func claim(_ advertisement: RPCAdvertisement, port: Int) -> Zone.Instance? {
        var base = configuration.instanceName.expand(service: advertisement.service, host: zone.hostLabel)
        if configuration.ports.first != port {
            let suffix = " (\(port))"
            base = DNSSDName.truncated(base, maxBytes: DNSSDName.maxLabelBytes - suffix.utf8.count) + suffix
        }
        var name = base
        for attempt in 2...17 {
            guard let set = records.service(instance: name, advertisement: advertisement, host: zone.hostLabel, port: port),
                  let srv = set.first(where: { $0.type == "SRV" })
            else { return nil }
            let changes = set.map { DNSChange.add($0) }
            var answer = send([.nameNotInUse(records.instanceName(name))], changes, context: context(advertisement, name))
            if answer == .yxDomain {
                // Taken: by this host's earlier run (same SRV), or by another host.
                answer = send([.recordExists(srv)], changes, context: context(advertisement, name))
            }
            switch answer {
            case .noError?:
                logger.notice(
                    "Service advertised in DNS",
                    metadata: context(advertisement, name).merging([LogField.port: "\(port)"]) { $1 })
                return Zone.Instance(name: name, advertisement: advertisement, port: port, records: set)
            case .nxRRSet?, .yxDomain?:
                let next = DNSSDName.truncated(base, maxBytes: DNSSDName.maxLabelBytes - 4) + " #\(attempt)"
                logger.warning(
                    "Instance name collision; using an alternative name",
                    metadata: context(advertisement, next).merging(
                        [LogField.previousInstance: "\(name)", LogField.collision: "network"]) { $1 })
                name = next
            default:
                return nil
            }
        }
        logger.error("Cannot advertise service in DNS: every alternative name is taken", metadata: context(advertisement, base))
        return nil
    }

    /// Deletes an instance's records if its SRV record is still this host's; true when they are gone.
    func withdraw(_ instance: Zone.Instance) -> Bool {
        guard let srv = instance.records.first(where: { $0.type == "SRV" }) else { return true }
        let owner = records.instanceName(instance.name)
        let changes: [DNSChange] =
            instance.records.filter { $0.type == "PTR" }.map { .delete($0) }
            + [.deleteRRSet(name: owner, type: "SRV"), .deleteRRSet(name: owner, type: "TXT")]
        let answer = send([.recordExists(srv)], changes, context: context(instance.advertisement, instance.name))
        if answer == .noError || answer == .nxRRSet {
            logger.notice("Service withdrawn from DNS", metadata: context(instance.advertisement, instance.name))
            return true
        }
        return false
    }

    private func context(_ advertisement: RPCAdvertisement, _ name: String) -> Logger.Metadata {
        [LogField.service: "\(advertisement.service)", LogField.instance: "\(name)"]
    }

    /// One update; nil when no answer came. Refusals other than the prerequisite answers the callers handle
    /// are logged here, with the server's code and TSIG error.
    func send(_ prerequisites: [DNSPrerequisite], _ changes: [DNSChange], context: Logger.Metadata) -> DNSResponseCode? {
        let answer: DNSUpdateClient.Answer
        do {
            // The RFC 9664 lease is asked for on what adds records; deletions need none.
            let adds = changes.contains { if case .add = $0 { true } else { false } }
            answer = try client.send(
                zone: configuration.domain, prerequisites: prerequisites, changes: changes, lease: adds ? configuration.lease : nil)
        } catch {
            if zone.serverAnswering {
                zone.serverAnswering = false
                logger.warning(
                    "Wide-area DNS server does not answer; retrying",
                    metadata: fields.merging(context) { $1 }.merging([LogField.error: "\(error)"]) { $1 })
            }
            return nil
        }
        if !zone.serverAnswering {
            zone.serverAnswering = true
            logger.notice("Wide-area DNS server answers again", metadata: fields)
        }
        if let granted = answer.grantedLease, !zone.grantedLeaseLogged {
            zone.grantedLeaseLogged = true
            logger.info("Wide-area DNS server grants update leases", metadata: fields.merging([LogField.leaseSeconds: "\(granted)"]) { $1 })
        }
        let expected = answer.rcode == .noError || (!prerequisites.isEmpty && [.yxDomain, .yxRRSet, .nxRRSet].contains(answer.rcode))
        switch expected {
        case true:
            return answer.rcode
        case false:
            var metadata = fields.merging(context) { $1 }
            metadata[LogField.dnsRcode] = "\(answer.rcode)"
            if let tsigError = answer.tsigError { metadata[LogField.tsigError] = "\(tsigError)" }
            logger.error("Wide-area DNS update refused", metadata: metadata)
            return answer.rcode
        }
    }
}
