import Dispatch
import RPCDNSSD
import RPCWideArea
import Synchronization

extension RPCServiceDiscovery {
    /// How often a unicast domain is asked again: unicast DNS announces nothing, so a browse polls. One
    /// browse is a few small queries to the zone's servers; a second bounds how late a change is seen.
    static let wideAreaPollInterval = DispatchTimeInterval.seconds(1)

    /// Browsing a unicast DNS domain (docs/DISCOVERY.md, "Across subnets"): the same records as on the link,
    /// queried through ldns from /etc/resolv.conf's servers (or `dnsServer`), repeated every
    /// `wideAreaPollInterval` and turned into the same events. The first browse failing (no server answers)
    /// ends the stream with that error; later failures keep the last answer and try again.
    func wideAreaEvents(domain: String, type: String) -> AsyncThrowingStream<RPCDiscoveryEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream<RPCDiscoveryEvent, any Error>.makeStream(bufferingPolicy: .unbounded)
        let browser = WideAreaBrowser(domain: domain, client: DNSQueryClient(server: dnsServer))
        let wanted = service
        let stopped = Atomic<Bool>(false)
        let wake = DispatchSemaphore(value: 0)
        continuation.onTermination = { _ in
            stopped.store(true, ordering: .relaxed)
            wake.signal()
        }
        DispatchQueue(label: "rpcd.discovery.widearea").async {
            var known: [String: RPCDiscoveredInstance] = [:]
            var settled = false
            while !stopped.load(ordering: .relaxed) {
                do {
                    let found = try browser.browse(type: type).compactMap { Self.instance(from: $0, service: wanted) }
                    var current: [String: RPCDiscoveredInstance] = [:]
                    for instance in found { current[instance.name] = instance }
                    for instance in found {
                        switch known[instance.name] {
                        case nil: continuation.yield(.appeared(instance))
                        case let previous? where previous != instance: continuation.yield(.updated(instance))
                        default: break
                        }
                    }
                    for (name, instance) in known where current[name] == nil { continuation.yield(.disappeared(instance)) }
                    known = current
                    if !settled {
                        settled = true
                        continuation.yield(.settled)
                    }
                } catch {
                    if !settled {
                        continuation.finish(throwing: error)
                        return
                    }
                }
                _ = wake.wait(timeout: .now() + Self.wideAreaPollInterval)
            }
            continuation.finish()
        }
        return stream
    }

    /// An instance from the zone, or nil when its TXT is not an rpcd record (or not the service asked for).
    static func instance(from found: WideAreaBrowser.Instance, service: String?) -> RPCDiscoveredInstance? {
        guard let advertisement = RPCAdvertisement(txt: DNSSDTXTRecord(parsing: found.txt)),
              service == nil || advertisement.service == service, let address = found.addresses.first
        else { return nil }
        let host = found.target.hasSuffix(".") ? String(found.target.dropLast()) : found.target
        return RPCDiscoveredInstance(
            name: found.name, domain: found.domain, advertisement: advertisement, hostName: host, address: address,
            port: found.port, interfaceIndex: 0, isIPv6: address.contains(":"))
    }
}
