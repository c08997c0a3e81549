/// A DNS-SD TXT record: `key=value` strings (RFC 6763 §6).
///
/// Building one enforces the RFC's rules and its size advice: keys are 1–9 printable ASCII characters
/// without `=` (§6.4 recommends at most nine), each string at most 255 bytes (§6.1), and the whole record at
/// most 400 bytes (§6.2: small enough to fit one packet with the other records). Keys compare
/// case-insensitively; the first occurrence of a key wins when parsing, as §6.4 requires.
package struct DNSSDTXTRecord: Hashable, Sendable {
    package struct Entry: Hashable, Sendable {
        package var key: String
        /// nil for a boolean attribute (`key` alone, no `=`).
        package var value: String?

        package init(_ key: String, _ value: String?) {
            self.key = key
            self.value = value
        }

        /// The bytes of the string as it goes on the wire.
        package var bytes: [UInt8] {
            guard let value else { return Array(key.utf8) }
            return Array(key.utf8) + [UInt8(ascii: "=")] + Array(value.utf8)
        }
    }

    package static let maxKeyLength = 9
    package static let maxStringBytes = 255
    package static let recommendedMaxBytes = 400

    package private(set) var entries: [Entry]

    /// Builds a record from entries in order; throws naming the offending key or the total size.
    package init(_ entries: [Entry]) throws(TXTRecordError) {
        var seen = Set<String>()
        for entry in entries {
            let key = entry.key
            guard (1...Self.maxKeyLength).contains(key.utf8.count),
                key.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: "=") })
            else {
                throw TXTRecordError("key '\(key)' must be 1 to \(Self.maxKeyLength) printable ASCII characters without '='")
            }
            guard seen.insert(key.lowercased()).inserted else { throw TXTRecordError("key '\(key)' appears twice") }
            guard entry.bytes.count <= Self.maxStringBytes else {
                throw TXTRecordError("'\(key)=' is \(entry.bytes.count) bytes; a TXT string holds at most \(Self.maxStringBytes)")
            }
        }
        self.entries = entries
        guard wireSize <= Self.recommendedMaxBytes else {
            throw TXTRecordError("the record is \(wireSize) bytes; RFC 6763 advises at most \(Self.recommendedMaxBytes)")
        }
    }

    /// Reads the strings of a received record. Lenient, as a receiver must be: strings without a key
    /// (starting with `=`) are skipped, later duplicates are ignored, values that are not UTF-8 are repaired.
    package init(parsing strings: [[UInt8]]) {
        var entries: [Entry] = []
        var seen = Set<String>()
        for string in strings where !string.isEmpty {
            let equals = string.firstIndex(of: UInt8(ascii: "="))
            let key = String(decoding: string[..<(equals ?? string.endIndex)], as: UTF8.self)
            guard !key.isEmpty, seen.insert(key.lowercased()).inserted else { continue }
            let value = equals.map { String(decoding: string[string.index(after: $0)...], as: UTF8.self) }
            entries.append(Entry(key, value))
        }
        self.entries = entries
    }

    /// The value of `key` (case-insensitive); nil when absent or a boolean attribute.
    package subscript(key: String) -> String? {
        let lowered = key.lowercased()
        return entries.first { $0.key.lowercased() == lowered }?.value
    }

    /// The strings as they go on the wire, in order.
    package var strings: [[UInt8]] { entries.map(\.bytes) }

    /// Bytes on the wire: each string plus its length byte.
    package var wireSize: Int { entries.reduce(0) { $0 + 1 + $1.bytes.count } }
}

package struct TXTRecordError: Error, Hashable, Sendable, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = "invalid TXT record: " + description }
}
