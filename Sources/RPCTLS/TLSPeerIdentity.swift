package import NIOSSL

/// The names a verified client certificate gives its holder, as `client:` access rules match them: the
/// subject's common name as it is (`client:NAME`), then its alternative names with their kind
/// (`client:dns:NAME`, `client:email:NAME`, `client:uri:NAME`), in that order, without duplicates.
///
/// A name matches only in the form it was issued in: a DNS name a CA put in a server-style certificate does
/// not pass for a common name. A certificate whose subject has more than one common name, or one that reads
/// like a typed name (`dns:...`), is ambiguous: it names nobody by common name (its alternative names still
/// count).
package enum TLSPeerIdentity {
    /// The kinds of alternative names, as `client:KIND:NAME` spells them.
    package static let alternativeKinds = ["dns", "email", "uri"]

    package static func identities(of certificate: NIOSSLCertificate) -> [String] {
        let commonNames = certificate.subjectName.filter { $0.type == .commonName }.map(\.value)
        var names: [String] = []
        if commonNames.count == 1, let name = commonNames.first, !isTyped(name) { names.append(name) }
        for alternative in certificate._subjectAlternativeNames() {
            let kind: String
            switch alternative.nameType {
            case .dnsName: kind = "dns"
            case .email: kind = "email"
            case .uri: kind = "uri"
            default: continue
            }
            let value = alternative.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
            if !value.isEmpty { names.append("\(kind):\(value)") }
        }
        var seen = Set<String>()
        return names.filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    /// Whether `name` starts like a typed alternative name (`dns:`, `email:`, `uri:`).
    static func isTyped(_ name: String) -> Bool {
        alternativeKinds.contains { name.hasPrefix($0 + ":") }
    }
}
