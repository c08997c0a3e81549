import CAvahi
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import RPCDNSSD

/// Browses one DNS-SD service type (or subtype) through avahi-daemon and resolves every instance it finds.
///
/// Events are handed to `handler` on Avahi's poll thread, in the order Avahi reports them; the handler must
/// return quickly and must not call back into this browser (hand the event on, e.g. to an AsyncStream, as
/// RPCDiscovery does). Resolvers stay open while their instance exists, so a changed TXT record is reported
/// again as `.resolved`. `start()` throws when avahi-daemon cannot be reached; a daemon lost later is reported
/// as `.failed`. Thread-safe.
package final class AvahiServiceBrowser: @unchecked Sendable {
    /// One instance as Avahi names it: the same name can appear on several interfaces and protocols.
    package struct InstanceKey: Hashable, Sendable {
        package var interface: Int32
        package var ipProtocol: Int32
        package var name: String
        package var type: String
        package var domain: String
    }

    /// A resolved instance.
    package struct Resolution: Hashable, Sendable {
        package var key: InstanceKey
        /// The host's name, e.g. `build-7.local`.
        package var hostName: String
        /// The address in text form (`10.0.0.2`, `fe80::1`).
        package var address: String
        /// The interface's name (`eth0`), for scoping link-local IPv6 addresses.
        package var interfaceName: String?
        package var port: Int
        package var txt: [[UInt8]]
        /// True when the service runs on this host.
        package var isLocal: Bool
    }

    package enum Event: Sendable {
        case found(InstanceKey)
        case resolved(Resolution)
        /// Resolving failed (the instance went away, or did not answer in time).
        case resolveFailed(InstanceKey, AvahiError)
        case removed(InstanceKey)
        /// Avahi has reported what its cache and a first query found.
        case allForNow
        /// Browsing stopped: avahi-daemon went away or refused the browse.
        case failed(AvahiError)
    }

    package let type: String
    private let handler: @Sendable (Event) -> Void
    private let poll: AvahiThreadedPoll
    // Guarded by the poll's lock.
    private var client: OpaquePointer?
    private var browser: OpaquePointer?
    private var resolvers: [InstanceKey: OpaquePointer] = [:]
    private var stopped = false

    /// `type` is `_rpcd._tcp` or a subtype such as `_calc._sub._rpcd._tcp`.
    package init(type: String, handler: @escaping @Sendable (Event) -> Void) throws(AvahiError) {
        self.type = type
        self.handler = handler
        self.poll = try AvahiThreadedPoll()
    }

    /// Connects to avahi-daemon and starts browsing. Throws when the daemon (or the system D-Bus) is absent.
    package func start() throws(AvahiError) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        let result: AvahiError? = poll.withLock {
            var error: Int32 = 0
            guard let client = avahi_client_new(poll.api, AvahiClientFlags(0), browserClientCallback, userdata, &error) else {
                return AvahiError("connecting to avahi-daemon", code: error)
            }
            self.client = client
            guard let browser = avahi_service_browser_new(
                client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), type, nil, AvahiLookupFlags(0),
                serviceBrowserCallback, userdata)
            else {
                let failure = AvahiError("browsing for \(type)", client: client)
                avahi_client_free(client)
                self.client = nil
                return failure
            }
            self.browser = browser
            return nil
        }
        if let result { throw result }
        try poll.start()
    }

    /// Stops browsing and releases everything; no event is delivered after it returns. Idempotent. Blocks
    /// briefly (joins Avahi's thread): call it from a task or thread, never from the handler.
    package func stop() {
        poll.withLock {
            stopped = true
            // Freeing the client frees its browser and resolvers.
            if let client { avahi_client_free(client) }
            client = nil
            browser = nil
            resolvers = [:]
        }
        poll.stop()
    }

    deinit {
        if !stopped { stop() }
    }

    // MARK: Callbacks (on the poll thread)

    fileprivate func clientChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        guard !stopped, state == AVAHI_CLIENT_FAILURE else { return }
        handler(.failed(AvahiError("avahi-daemon connection", client: client)))
    }

    fileprivate func browserEvent(
        _ event: AvahiBrowserEvent, interface: AvahiIfIndex, ipProtocol: AvahiProtocol, name: String?, type: String?,
        domain: String?
    ) {
        guard !stopped, let client else { return }
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let name, let domain else { return }
            // Resolve with the service type itself: a subtype names a PTR record only, not SRV or TXT.
            let key = InstanceKey(interface: interface, ipProtocol: ipProtocol, name: name, type: RPCAdvertisement.serviceType, domain: domain)
            handler(.found(key))
            guard resolvers[key] == nil else { return }
            let userdata = Unmanaged.passUnretained(self).toOpaque()
            if let resolver = avahi_service_resolver_new(
                client, interface, ipProtocol, name, key.type, domain, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiLookupFlags(0),
                serviceResolverCallback, userdata)
            {
                resolvers[key] = resolver
            } else {
                handler(.resolveFailed(key, AvahiError("resolving '\(name)'", client: client)))
            }
        case AVAHI_BROWSER_REMOVE:
            guard let name, let domain else { return }
            let key = InstanceKey(interface: interface, ipProtocol: ipProtocol, name: name, type: RPCAdvertisement.serviceType, domain: domain)
            if let resolver = resolvers.removeValue(forKey: key) { avahi_service_resolver_free(resolver) }
            handler(.removed(key))
        case AVAHI_BROWSER_ALL_FOR_NOW:
            handler(.allForNow)
        case AVAHI_BROWSER_FAILURE:
            handler(.failed(AvahiError("browsing for \(self.type)", client: client)))
        default:
            break
        }
    }

    fileprivate func resolverEvent(
        _ resolver: OpaquePointer, _ event: AvahiResolverEvent, interface: AvahiIfIndex, ipProtocol: AvahiProtocol,
        name: String, domain: String, hostName: String?, address: UnsafePointer<AvahiAddress>?, port: UInt16,
        txt: UnsafeMutablePointer<AvahiStringList>?, flags: AvahiLookupResultFlags
    ) {
        guard !stopped else { return }
        let key = InstanceKey(interface: interface, ipProtocol: ipProtocol, name: name, type: RPCAdvertisement.serviceType, domain: domain)
        guard event == AVAHI_RESOLVER_FOUND, let address else {
            // A failed resolver is done: free it, so the next NEW event can start a fresh one.
            if resolvers[key] == resolver { resolvers[key] = nil }
            avahi_service_resolver_free(resolver)
            handler(.resolveFailed(key, AvahiError("resolving '\(name)'", client: client)))
            return
        }
        var text = [CChar](repeating: 0, count: rpcd_avahi_address_str_max())
        avahi_address_snprint(&text, text.count, address)
        var interfaceName: String?
        var nameBuffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        if interface >= 0, if_indextoname(UInt32(interface), &nameBuffer) != nil {
            interfaceName = Self.string(nameBuffer)
        }
        handler(.resolved(Resolution(
            key: key, hostName: hostName ?? "", address: Self.string(text), interfaceName: interfaceName, port: Int(port),
            txt: AvahiTXT.strings(txt), isLocal: flags.rawValue & AVAHI_LOOKUP_RESULT_LOCAL.rawValue != 0)))
    }
}

extension AvahiServiceBrowser {
    /// The text of a NUL-terminated C buffer.
    fileprivate static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

private func browserClientCallback(_ client: OpaquePointer?, _ state: AvahiClientState, _ userdata: UnsafeMutableRawPointer?) {
    guard let client, let userdata else { return }
    Unmanaged<AvahiServiceBrowser>.fromOpaque(userdata).takeUnretainedValue().clientChanged(client, state)
}

private func serviceBrowserCallback(
    _ browser: OpaquePointer?, _ interface: AvahiIfIndex, _ ipProtocol: AvahiProtocol, _ event: AvahiBrowserEvent,
    _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
    _ flags: AvahiLookupResultFlags, _ userdata: UnsafeMutableRawPointer?
) {
    guard let userdata else { return }
    Unmanaged<AvahiServiceBrowser>.fromOpaque(userdata).takeUnretainedValue().browserEvent(
        event, interface: interface, ipProtocol: ipProtocol, name: name.map { String(cString: $0) },
        type: type.map { String(cString: $0) }, domain: domain.map { String(cString: $0) })
}

private func serviceResolverCallback(
    _ resolver: OpaquePointer?, _ interface: AvahiIfIndex, _ ipProtocol: AvahiProtocol, _ event: AvahiResolverEvent,
    _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
    _ hostName: UnsafePointer<CChar>?, _ address: UnsafePointer<AvahiAddress>?, _ port: UInt16,
    _ txt: UnsafeMutablePointer<AvahiStringList>?, _ flags: AvahiLookupResultFlags, _ userdata: UnsafeMutableRawPointer?
) {
    guard let resolver, let userdata, let name, let domain else { return }
    Unmanaged<AvahiServiceBrowser>.fromOpaque(userdata).takeUnretainedValue().resolverEvent(
        resolver, event, interface: interface, ipProtocol: ipProtocol, name: String(cString: name),
        domain: String(cString: domain), hostName: hostName.map { String(cString: $0) }, address: address, port: port,
        txt: txt, flags: flags)
}
