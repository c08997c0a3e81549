#if canImport(Glibc)
import Glibc
#endif

import CLDNS

/// Which machine holds a host name in the zone (`WideAreaLease.owner`): 16 hex digits, the same across
/// restarts of rpcd on one machine (so a host restarted after a `kill -9` knows its records) and different on
/// another machine with the same host name (so that one renames its host instead of taking them over).
///
/// Derived from /etc/machine-id, which machine-id(5) asks never to expose as it is: what goes into the zone is
/// SHA-256 of it with the zone's name and rpcd's own label, so it tells an observer nothing and differs per
/// zone. Without a machine id, a random one per start: the host then renames itself after a `kill -9` until
/// its old lease passed.
package enum WideAreaHostID {
    package static func current(domain: String, machineIDPath: String = "/etc/machine-id") -> String {
        guard let machineID = read(machineIDPath), !machineID.isEmpty else {
            return (0..<8).map { _ in hex(UInt8.random(in: 0...255)) }.joined()
        }
        return derive(machineID: machineID, domain: domain)
    }

    /// The id of `machineID` in `domain`.
    package static func derive(machineID: String, domain: String) -> String {
        var context = ldns_sha256_CTX()
        ldns_sha256_init(&context)
        let input = Array("rpcd wide-area host id\n\(machineID)\n\(DNSPresentation.absolute(domain).lowercased())".utf8)
        ldns_sha256_update(&context, input, input.count)
        var digest = [UInt8](repeating: 0, count: Int(LDNS_SHA256_DIGEST_LENGTH))
        ldns_sha256_final(&digest, &context)
        return digest.prefix(8).map(hex).joined()
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    private static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 128)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let line = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: line, as: UTF8.self).filter { !$0.isWhitespace }
    }
}
