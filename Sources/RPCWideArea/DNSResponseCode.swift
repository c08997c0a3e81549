/// A DNS response code (RFC 1035, RFC 2136 §2.2) or TSIG error (RFC 8945 §5.3), named as `dig` names it:
/// what rpcd logs when a server refuses an update.
package struct DNSResponseCode: Hashable, Sendable, CustomStringConvertible {
    package var rawValue: Int

    package init(_ rawValue: Int) { self.rawValue = rawValue }

    package static let noError = DNSResponseCode(0)
    package static let serverFailure = DNSResponseCode(2)
    package static let nameError = DNSResponseCode(3)
    package static let refused = DNSResponseCode(5)
    /// A name that should not exist does (prerequisite `nameNotInUse` failed).
    package static let yxDomain = DNSResponseCode(6)
    /// A record set that should not exist does (prerequisite `recordSetAbsent` failed).
    package static let yxRRSet = DNSResponseCode(7)
    /// A record set that should exist does not (prerequisite `recordExists` failed).
    package static let nxRRSet = DNSResponseCode(8)
    /// Not authorized: the key is unknown to the server or the signature is wrong (with a TSIG error).
    package static let notAuth = DNSResponseCode(9)

    private static let names = [
        0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED", 6: "YXDOMAIN", 7: "YXRRSET",
        8: "NXRRSET", 9: "NOTAUTH", 10: "NOTZONE", 16: "BADSIG", 17: "BADKEY", 18: "BADTIME", 19: "BADMODE", 20: "BADNAME",
        21: "BADALG", 22: "BADTRUNC", 23: "BADCOOKIE",
    ]

    package var description: String { Self.names[rawValue] ?? "RCODE\(rawValue)" }
}
