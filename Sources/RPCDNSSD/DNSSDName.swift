import RPCProtocol

/// The naming rules of DNS-SD (RFC 6763) and of service names (RFC 6335), as pure functions.
///
/// Avahi checks that a service type is made of DNS labels but not RFC 6335's length and character rules, so
/// rpcd checks them itself before anything reaches the daemon. Nothing here touches the network.
package enum DNSSDName {
    /// The longest DNS label, in bytes (RFC 1035 §2.3.4); an instance name is one label.
    package static let maxLabelBytes = 63

    /// The rule `validateServiceName` enforces, phrased for error messages.
    package static let serviceNameRule = ServiceName.dnssdRule

    /// Checks an RFC 6335 §5.1 service name (`rpcd`, `calc`) as DNS-SD does, in either case (the one rule is
    /// `ServiceName`'s).
    package static func validateServiceName(_ name: String) throws(DNSSDNameError) {
        if let problem = ServiceName.problem(with: name, allowingUpperCase: true) {
            throw DNSSDNameError(name: name, problem: "\(problem); expected \(serviceNameRule)")
        }
    }

    /// `_NAME._tcp` (or `._udp`) after checking NAME.
    package static func serviceType(_ name: String, transport: Transport = .tcp) throws(DNSSDNameError) -> String {
        try validateServiceName(name)
        return "_\(name)._\(transport.rawValue)"
    }

    /// The subtype `_SUB._sub.TYPE` (RFC 6763 §7.1), e.g. `_calc._sub._rpcd._tcp`. SUB follows the same rules
    /// as a service name, so a subtype is exactly what a client can type.
    package static func subtype(_ sub: String, of type: String) throws(DNSSDNameError) -> String {
        try validateServiceName(sub)
        return "_\(sub)._sub.\(type)"
    }

    /// `text` cut to at most `maxBytes` bytes of UTF-8 without splitting a character, with trailing blanks
    /// removed (a name that ends in a space looks like a mistake).
    package static func truncated(_ text: String, maxBytes: Int = maxLabelBytes) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            guard used + size <= maxBytes else { break }
            result.append(character)
            used += size
        }
        while result.last == " " { result.removeLast() }
        return result
    }

    package enum Transport: String, Sendable {
        case tcp
        case udp
    }
}

/// A name that breaks DNS-SD's or RFC 6335's rules; the message quotes it and says what is allowed.
package struct DNSSDNameError: Error, Hashable, Sendable, CustomStringConvertible {
    package var name: String
    package var problem: String
    package var description: String { "invalid service name '\(name)': \(problem)" }
}
