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
import RPCAvahi
package import RPCDNSSD
import Synchronization

/// Finds rpcd services on the local network, like Bonjour's NSNetServiceBrowser: browse `_rpcd._tcp` (every
/// service) or one service's subtype `_SERVICE._sub._rpcd._tcp`, resolve each instance to host, address,
/// port and TXT, and report appear/disappear events as an `AsyncSequence`.
///
///     for try await event in RPCServiceDiscovery(service: "calc") {
///         if case .appeared(let instance) = event { print(instance.name, instance.endpointText) }
///     }
///
/// Needs a running avahi-daemon reachable over the system D-Bus: iterating throws `AvahiError` at once when
/// there is none, and later if it goes away. Avahi's callbacks run on Avahi's own thread and only hand events
/// to the stream; nothing waits on an event loop. Browsing stops when iteration ends or its task is cancelled.
package struct RPCServiceDiscovery: AsyncSequence, Sendable {
    package typealias Element = RPCDiscoveryEvent
    package typealias Failure = any Error

    /// The service looked for, or nil for all of them.
    package let service: String?
    /// A unicast DNS domain to browse (wide-area DNS-SD), or nil (or `local`) for the link, through Avahi.
    package let domain: String?
    /// With `domain`: the DNS server to ask instead of /etc/resolv.conf's.
    package let dnsServer: DNSServerAddress?

    /// Browses for `service` (an RFC 6335 name; checked when iteration starts) or, with nil, every service:
    /// on the link through avahi-daemon, or with `domain` in that unicast DNS domain (no avahi-daemon needed).
    package init(service: String? = nil, domain: String? = nil, dnsServer: DNSServerAddress? = nil) {
        self.service = service
        let trimmed = domain.map { $0.hasSuffix(".") ? String($0.dropLast()) : $0 }
        self.domain = trimmed?.lowercased() == "local" ? nil : trimmed
        self.dnsServer = dnsServer
    }

    /// The DNS-SD type browsed.
    package func browseType() throws(DNSSDNameError) -> String {
        guard let service else { return RPCAdvertisement.serviceType }
        return try RPCAdvertisement.subtype(for: service)
    }

    package func makeAsyncIterator() -> AsyncThrowingStream<RPCDiscoveryEvent, any Error>.Iterator {
        events().makeAsyncIterator()
    }

    /// The events as a stream; browsing runs while the stream is consumed.
    package func events() -> AsyncThrowingStream<RPCDiscoveryEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream<RPCDiscoveryEvent, any Error>.makeStream(bufferingPolicy: .unbounded)
        let type: String
        do {
            type = try browseType()
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        if let domain { return wideAreaEvents(domain: domain, type: type) }
        let wanted = service
        let tracker = Mutex(DiscoveryTracker<AvahiServiceBrowser.InstanceKey>())
        let handler: @Sendable (AvahiServiceBrowser.Event) -> Void = { event in
            // On Avahi's thread: update the bookkeeping, hand the results to the stream, return.
            let output: [RPCDiscoveryEvent] = tracker.withLock { tracker in
                switch event {
                case .found(let key): return tracker.found(key)
                case .resolved(let resolution): return tracker.resolved(resolution.key, Self.instance(from: resolution, service: wanted))
                case .resolveFailed(let key, _): return tracker.resolveFailed(key)
                case .removed(let key): return tracker.removed(key)
                case .allForNow: return tracker.allForNowReached()
                case .failed: return []
                }
            }
            for item in output { continuation.yield(item) }
            if case .failed(let error) = event { continuation.finish(throwing: error) }
        }
        let browser: AvahiServiceBrowser
        do {
            browser = try AvahiServiceBrowser(type: type, handler: handler)
            try browser.start()
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        continuation.onTermination = { _ in
            // onTermination can run on Avahi's own thread (when the handler finishes the stream), where
            // stopping would wait for itself: stop from a thread of its own.
            DispatchQueue.global().async { browser.stop() }
        }
        return stream
    }

    /// An instance from a resolution, or nil when its TXT is not an rpcd record (or not the service asked for).
    static func instance(from resolution: AvahiServiceBrowser.Resolution, service: String?) -> RPCDiscoveredInstance? {
        guard let advertisement = RPCAdvertisement(txt: DNSSDTXTRecord(parsing: resolution.txt)) else { return nil }
        if let service, advertisement.service != service { return nil }
        let isIPv6 = resolution.address.contains(":")
        var address = resolution.address
        if isIPv6, address.lowercased().hasPrefix("fe80:"), let interface = resolution.interfaceName {
            address += "%" + interface
        }
        return RPCDiscoveredInstance(
            name: resolution.key.name, domain: resolution.key.domain, advertisement: advertisement,
            hostName: resolution.hostName, address: address, port: resolution.port,
            interfaceIndex: resolution.key.interface, isIPv6: isIPv6)
    }
}
