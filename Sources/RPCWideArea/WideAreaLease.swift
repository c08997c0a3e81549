#if canImport(Glibc)
import Glibc
#endif

/// How long a host's records stand in the zone unless it refreshes them (docs/DISCOVERY.md, "Leases"): a TXT
/// record at the host's own name, the SRV target of all its instances, which the host re-writes every
/// `duration`/2:
///
///     h1.DOMAIN.    TXT  "lease=120" "expires=1764141234"
///
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

    package init(duration: Int, expires: Int) {
        self.duration = duration
        self.expires = expires
    }

    /// A lease of `duration` seconds from `now`.
    package init(duration: Int, from now: Int) {
        self.init(duration: duration, expires: now + duration)
    }

    /// The lease in a TXT record's strings; nil when they are not exactly the strings `txt` writes (a TXT record
    /// at a host name that is not rpcd's lease is never taken for one, so never swept by it).
    package init?(txt strings: [[UInt8]]) {
        guard strings.count == 2,
              let duration = Self.value(strings[0], key: "lease"), let expires = Self.value(strings[1], key: "expires")
        else { return nil }
        self.init(duration: duration, expires: expires)
        guard txt == strings else { return nil }
    }

    /// The record's strings: `lease=SECONDS`, `expires=UNIX-SECONDS`.
    package var txt: [[UInt8]] { [Array("lease=\(duration)".utf8), Array("expires=\(expires)".utf8)] }

    /// True once the lease has run out: from then on the host's records are stale.
    package func isExpired(at now: Int) -> Bool { now >= expires }

    /// The wall clock, Unix seconds: what `expires` is compared with.
    package static func now() -> Int { Int(time(nil)) }

    private static func value(_ string: [UInt8], key: String) -> Int? {
        let prefix = Array((key + "=").utf8)
        guard string.starts(with: prefix), string.count > prefix.count, string.count - prefix.count <= 12 else { return nil }
        return Int(String(decoding: string[prefix.count...], as: UTF8.self)).flatMap { $0 >= 0 ? $0 : nil }
    }
}
