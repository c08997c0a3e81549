/// Names and strings in DNS presentation format (RFC 1035 §5.1), the text ldns parses records from.
///
/// An instance name such as `calc on build-7` is one label with spaces; in a zone file (and in `dig`'s
/// output) it reads `calc\032on\032build-7`. Everything but letters, digits, `-` and `_` is written as
/// `\DDD`, so a dot or a quote inside a label can never split or end it.
package enum DNSPresentation {
    /// One label, escaped.
    package static func label(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "\\" + String(repeating: "0", count: byte < 10 ? 2 : byte < 100 ? 1 : 0) + String(byte)
            }
        }
        return out
    }

    /// A character-string (a TXT string), quoted, with `"`, `\` and anything outside printable ASCII as `\DDD`.
    package static func characterString(_ bytes: [UInt8]) -> String {
        var out = "\""
        for byte in bytes {
            if byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "\\" + String(repeating: "0", count: byte < 10 ? 2 : byte < 100 ? 1 : 0) + String(byte)
            }
        }
        return out + "\""
    }

    /// The labels of a name in presentation format, unescaped (`\DDD` and `\X`); the root's empty label dropped.
    package static func labels(of name: String) -> [String] {
        var labels: [String] = []
        var current: [UInt8] = []
        var bytes = Array(name.utf8)[...]
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "\\"), let next = bytes.first {
                if next >= UInt8(ascii: "0"), next <= UInt8(ascii: "9"), bytes.count >= 3,
                    let value = UInt8(String(decoding: bytes.prefix(3), as: UTF8.self))
                {
                    current.append(value)
                    bytes.removeFirst(3)
                } else {
                    current.append(next)
                    bytes.removeFirst()
                }
            } else if byte == UInt8(ascii: ".") {
                labels.append(String(decoding: current, as: UTF8.self))
                current = []
            } else {
                current.append(byte)
            }
        }
        if !current.isEmpty { labels.append(String(decoding: current, as: UTF8.self)) }
        return labels
    }

    /// `domain` as an absolute name: lower-cased is not needed (DNS compares names case-insensitively), a
    /// trailing dot is.
    package static func absolute(_ domain: String) -> String {
        domain.hasSuffix(".") ? domain : domain + "."
    }
}
