#if canImport(Glibc)
import Glibc
#endif

/// How long a host's records stand in the zone unless it refreshes them (docs/DISCOVERY.md, "Leases"): a TXT
/// record at the host's own name, the SRV target of all its instances, which the host re-writes every
/// `duration`/2:
///
///     h1.DOMAIN.    TXT  "lease=120" "expires=1764141234" "owner=5f0c2a9e41b7d3c8"
///
/// `owner` says which machine holds the host name (`WideAreaHostID`): another machine with the same host name
/// finds the name taken and renames its host (`h1-2`), as mDNS does; this machine, restarted after a `kill -9`,
/// takes it back.
/// `expires` is the wall clock in Unix seconds. Why a record in the zone: BIND 9 does not implement RFC 9664
/// Update Leases (rpcd asks for one anyway, `DNSUpdateClient`), so the server would keep a killed host's records
/// for ever; written into the zone, the lease is something every rpcd publishing there and every browser can
/// read. Browsers ignore a host whose lease passed at once; publishers delete its records (`WideAreaSweep`).
/// Hosts' clocks must agree to well within `duration`/2, the margin a live host's lease always has (TSIG
/// already refuses clocks more than 5 minutes off; NTP does much better).
package struct WideAreaLease: Hashable, Sendable {
    /// Seconds the lease runs from each refresh (`[WideArea] Lease=`).
    package var duration: Int
    /// When it ends, in Unix seconds.
    package var expires: Int
    /// The holder's `WideAreaHostID`.
    package var owner: String

    package init(duration: Int, expires: Int, owner: String) {
        self.duration = duration
        self.expires = expires
        self.owner = owner
    }

    /// A lease of `duration` seconds from `now`.
    package init(duration: Int, from now: Int, owner: String) {
        self.init(duration: duration, expires: now + duration, owner: owner)
    }

    /// The lease in a TXT record's strings; nil when they are not exactly the strings `txt` writes (a TXT record
    /// at a host name that is not rpcd's lease is never taken for one, so never swept by it).
    package init?(txt strings: [[UInt8]]) {
        let ownerPrefix = Array("owner=".utf8)
        guard strings.count == 3,
              let duration = Self.value(strings[0], key: "lease"), let expires = Self.value(strings[1], key: "expires"),
              strings[2].starts(with: ownerPrefix), (ownerPrefix.count + 1...ownerPrefix.count + 64).contains(strings[2].count)
        else { return nil }
        self.init(duration: duration, expires: expires, owner: String(decoding: strings[2].dropFirst(ownerPrefix.count), as: UTF8.self))
        guard txt == strings else { return nil }
    }

    /// The record's strings: `lease=SECONDS`, `expires=UNIX-SECONDS`, `owner=HOST-ID`.
    package var txt: [[UInt8]] {
        [Array("lease=\(duration)".utf8), Array("expires=\(expires)".utf8), Array("owner=\(owner)".utf8)]
    }

    /// True once the lease has run out: from then on the host's records are stale.
    package func isExpired(at now: Int) -> Bool { now >= expires }

    /// The wall clock, Unix seconds: what `expires` is compared with.
    package static func now() -> Int { Int(time(nil)) }

    /// The wall clock rounded up to the next second: what a new lease starts from, so that it never ends before
    /// `duration` whole seconds have passed.
    package static func nextSecond() -> Int {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int(spec.tv_sec) + (spec.tv_nsec > 0 ? 1 : 0)
    }

    private static func value(_ string: [UInt8], key: String) -> Int? {
        let prefix = Array((key + "=").utf8)
        guard string.starts(with: prefix), string.count > prefix.count, string.count - prefix.count <= 12 else { return nil }
        return Int(String(decoding: string[prefix.count...], as: UTF8.self)).flatMap { $0 >= 0 ? $0 : nil }
    }
}
