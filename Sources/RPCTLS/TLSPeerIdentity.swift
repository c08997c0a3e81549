import NIOSSL

/// The names a verified client certificate gives its holder, as `client:NAME` access rules match them: the
/// subject's common names, then its DNS, e-mail and URI alternative names, in that order, without duplicates.
public enum TLSPeerIdentity {
    public static func identities(of certificate: NIOSSLCertificate) -> [String] {
        var names = certificate.subjectName.filter { $0.type == .commonName }.map(\.value)
        for alternative in certificate._subjectAlternativeNames() {
            switch alternative.nameType {
            case .dnsName, .email, .uri:
                names.append(alternative.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) })
            default:
                continue
            }
        }
        var seen = Set<String>()
        return names.filter { !$0.isEmpty && seen.insert($0).inserted }
    }
}
