import CAvahi
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
package import Logging
package import RPCDNSSD
import RPCLogging

/// Publishes rpcd's services through avahi-daemon (libavahi-client over D-Bus).
///
/// Each advertisement becomes, for every TCP port, one DNS-SD service of type `_rpcd._tcp` with the subtype
/// `_SERVICE._sub._rpcd._tcp` and the rpcd TXT record, in an entry group of its own, so one service can be
/// added, withdrawn or renamed without touching the others.
///
/// Robustness: the client is created with `AVAHI_CLIENT_NO_FAIL`, so rpcd starts without avahi-daemon and
/// publishes when it appears; when the daemon goes away the client is recreated and everything is published
/// again once it is back; on a name collision the alternative name Avahi proposes is used and logged. Without
/// a system D-Bus at all (where NO_FAIL cannot wait), creating the client is retried every few seconds.
/// Nothing here ever stops the daemon: advertising problems are logged, and rpcd keeps serving.
///
/// Threads: all Avahi work runs on Avahi's own threaded poll. Callbacks arrive there; `publish` and `stop`
/// take the poll's lock from the calling task (never call them from an event loop or an Avahi callback).
/// Every mutable property below is guarded by that lock.
package final class AvahiServicePublisher: ServicePublisher, @unchecked Sendable {
    package struct Configuration: Sendable {
        /// The TCP ports to announce each service on (the bound listeners'), in order.
        package var ports: [Int]
        /// Those of `ports` whose listeners speak TLS: their records say `tls=1`.
        package var tlsPorts: Set<Int>
        /// The reachable HTTP listeners' ports, named in every record's TXT (`http=`, `https=`).
        package var httpPort: Int?
        package var httpsPort: Int?
        /// The web page (console) to announce as `_http._tcp`, if any.
        package var webPage: RPCWebPageAdvertisement?
        package var instanceName: DNSSDInstanceNameTemplate
        /// Interface names to publish on; empty means all of them.
        package var interfaces: [String]
        package var ipProtocol: IPProtocol

        package init(
            ports: [Int], tlsPorts: Set<Int> = [], httpPort: Int? = nil, httpsPort: Int? = nil,
            webPage: RPCWebPageAdvertisement? = nil, instanceName: DNSSDInstanceNameTemplate = .default,
            interfaces: [String] = [], ipProtocol: IPProtocol = .any
        ) {
            self.ports = ports
            self.tlsPorts = tlsPorts
            self.httpPort = httpPort
            self.httpsPort = httpsPort
            self.webPage = webPage
            self.instanceName = instanceName
            self.interfaces = interfaces
            self.ipProtocol = ipProtocol
        }
    }

    /// Which address families the records are published on.
    package enum IPProtocol: Sendable {
        case ipv4, ipv6, any

        var avahi: AvahiProtocol {
            switch self {
            case .ipv4: AvahiProtocol(AVAHI_PROTO_INET)
            case .ipv6: AvahiProtocol(AVAHI_PROTO_INET6)
            case .any: AvahiProtocol(AVAHI_PROTO_UNSPEC)
            }
        }
    }

    /// One service on one port, or the web page: one entry group.
    final class Record {
        unowned let publisher: AvahiServicePublisher
        var advertisement: RPCAdvertisement
        let port: Int
        /// Set for the web page's record: `_http._tcp` with its TXT, no subtype; `advertisement` then only
        /// names it (`rpcd`).
        var webPage: RPCWebPageAdvertisement?
        /// The name from the template (plus a port suffix when there are several ports).
        var baseName: String?
        /// The name in use: the base name, or an alternative after collisions.
        var name: String?
        var group: OpaquePointer?

        init(publisher: AvahiServicePublisher, advertisement: RPCAdvertisement, port: Int) {
            self.publisher = publisher
            self.advertisement = advertisement
            self.port = port
        }

        var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
    }

    /// The web page's record among `records` (service keys are "service:port").
    static let webPageKey = "web page"

    let configuration: Configuration
    let logger: Logger
    private let poll: AvahiThreadedPoll
    // The properties below are shared with AvahiServicePublisher+Records.swift and guarded by the poll's lock.
    var client: OpaquePointer?
    /// Keyed by "service:port".
    var records: [String: Record] = [:]
    private var started = false
    var stopped = false
    private var lostDaemonAt: ContinuousClock.Instant?
    /// Re-arms while avahi_client_new keeps failing (no system D-Bus).
    private var retryTimer: OpaquePointer?
    private var reportedConnectFailure = false
    static let retryIntervalMilliseconds: UInt32 = 5000

    package init(configuration: Configuration, logger: Logger) throws(AvahiError) {
        self.configuration = configuration
        self.logger = logger
        self.poll = try AvahiThreadedPoll()
    }

    // MARK: ServicePublisher

    package func start() throws {
        poll.withLock {
            guard !started else { return }
            started = true
            connectOrRetry()
        }
        try poll.start()
    }

    package func publish(_ advertisements: [RPCAdvertisement]) {
        var wanted: [String: (RPCAdvertisement, Int)] = [:]
        for advertisement in advertisements {
            do {
                _ = try advertisement.subtype()
                _ = try advertisement.txtRecord()
            } catch {
                logger.error("Service not advertised", metadata: [LogField.service: "\(advertisement.service)", LogField.error: "\(error)"])
                continue
            }
            for port in configuration.ports {
                var onPort = advertisement
                onPort.tls = configuration.tlsPorts.contains(port)
                onPort.httpPort = configuration.httpPort
                onPort.httpsPort = configuration.httpsPort
                wanted["\(advertisement.service):\(port)"] = (onPort, port)
            }
        }
        if let page = configuration.webPage {
            let name = RPCAdvertisement(
                service: RPCWebPageAdvertisement.serviceName, version: "", fingerprint: "", protocolVersion: 0)
            wanted[Self.webPageKey] = (name, page.port)
        }
        poll.withLock {
            guard !stopped else { return }
            for (key, record) in records where wanted[key] == nil {
                withdraw(record)
                records[key] = nil
                logger.notice("Advertisement withdrawn", metadata: [LogField.service: "\(record.advertisement.service)", LogField.instance: "\(record.name ?? "")"])
            }
            for (key, (advertisement, port)) in wanted.sorted(by: { $0.key < $1.key }) {
                if let record = records[key] {
                    guard record.advertisement != advertisement else { continue }
                    record.advertisement = advertisement
                    updateTXT(record)
                } else {
                    let record = Record(publisher: self, advertisement: advertisement, port: port)
                    if key == Self.webPageKey { record.webPage = configuration.webPage }
                    records[key] = record
                    if isRunning { register(record) }
                }
            }
        }
    }

    package func stop() async {
        // avahi_threaded_poll_stop joins the poll thread, and withdrawing is a D-Bus round trip per group:
        // do both on a thread of their own rather than on the cooperative pool.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.poll.withLock {
                    guard !self.stopped else { return }
                    self.stopped = true
                    for record in self.records.values { self.withdraw(record) }
                    if !self.records.isEmpty { self.logger.notice("Every advertisement withdrawn") }
                    self.records = [:]
                    if let client = self.client { avahi_client_free(client) }
                    self.client = nil
                    if let timer = self.retryTimer { self.poll.api.pointee.timeout_free(timer) }
                    self.retryTimer = nil
                }
                self.poll.stop()
                continuation.resume()
            }
        }
    }

    // MARK: Client (on the poll thread, or with the lock held)

    var isRunning: Bool {
        guard let client else { return false }
        return avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING
    }

    /// Creates the client; when that fails (no system D-Bus), logs once and tries again later.
    private func connectOrRetry() {
        var error: Int32 = 0
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        // NO_FAIL: without avahi-daemon the client waits in CONNECTING and reports RUNNING once it appears.
        if let client = avahi_client_new(poll.api, AVAHI_CLIENT_NO_FAIL, clientCallback, userdata, &error) {
            self.client = client
            reportedConnectFailure = false
            return
        }
        if !reportedConnectFailure {
            reportedConnectFailure = true
            logger.warning(
                "Cannot reach avahi-daemon; services are advertised once it can be reached",
                metadata: [LogField.error: "\(AvahiError("connecting to avahi-daemon over the system D-Bus", code: error))"])
        }
        var due = timeval()
        avahi_elapse_time(&due, Self.retryIntervalMilliseconds, 0)
        let api = poll.api
        if let timer = retryTimer {
            api.pointee.timeout_update(timer, &due)
        } else {
            retryTimer = api.pointee.timeout_new(api, &due, retryCallback, userdata)
        }
    }

    fileprivate func retryDue() {
        guard !stopped, client == nil else { return }
        if let timer = retryTimer { poll.api.pointee.timeout_update(timer, nil) }
        connectOrRetry()
    }

    fileprivate func clientStateChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        // The callback can run inside avahi_client_new, before it has returned the pointer.
        self.client = client
        guard !stopped else { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            var metadata: Logger.Metadata = [LogField.host: "\(hostName)"]
            if let lost = lostDaemonAt {
                metadata[LogField.afterMilliseconds] = "\((ContinuousClock.now - lost).milliseconds)"
                lostDaemonAt = nil
            }
            logger.notice("avahi-daemon is running; advertising services", metadata: metadata)
            for record in records.values.sorted(by: { $0.advertisement.service < $1.advertisement.service }) {
                register(record)
            }
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is being (re)negotiated: records must go until it is settled, and their names are
            // made again from the template, since %h may change.
            for record in records.values {
                if let group = record.group { avahi_entry_group_reset(group) }
                record.baseName = nil
                record.name = nil
            }
        case AVAHI_CLIENT_CONNECTING:
            logger.notice("Waiting for avahi-daemon; services are advertised once it runs")
        case AVAHI_CLIENT_FAILURE:
            let error = AvahiError("avahi-daemon connection", client: client)
            logger.warning("avahi-daemon went away; advertising again once it is back", metadata: [LogField.error: "\(error)"])
            lostDaemonAt = .now
            // Freeing the client frees its entry groups too.
            for record in records.values {
                record.group = nil
                record.name = nil
                record.baseName = nil
            }
            avahi_client_free(client)
            self.client = nil
            connectOrRetry()
        default:
            break
        }
    }

    var hostName: String {
        guard let client, let name = avahi_client_get_host_name(client) else { return "localhost" }
        return String(cString: name)
    }
}

private func clientCallback(_ client: OpaquePointer?, _ state: AvahiClientState, _ userdata: UnsafeMutableRawPointer?) {
    guard let client, let userdata else { return }
    Unmanaged<AvahiServicePublisher>.fromOpaque(userdata).takeUnretainedValue().clientStateChanged(client, state)
}

private func retryCallback(_ timer: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    Unmanaged<AvahiServicePublisher>.fromOpaque(userdata).takeUnretainedValue().retryDue()
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
