import RPCClient
/// A light scan of one reply object for load generation: finds the integer `id` and whether there is an
/// `error` member, without building a tree.
///
/// Only the top-level members are looked at; nested values are skipped by counting brackets outside strings.
/// It does not validate JSON beyond what it needs, so it is for trusted peers and benchmarks, not for
/// `RPCClient`'s replies (which are parsed fully).
public enum RPCReplyScanner {
    public struct Summary: Hashable, Sendable {
        /// The id member when it is an integer literal (as the load generator sends).
        public var id: Int?
        /// Whether the object has an `error` member.
        public var isError: Bool

        public init(id: Int?, isError: Bool) {
            self.id = id
            self.isError = isError
        }
    }

    /// The summary of a reply object, or nil if `bytes` does not hold a JSON object.
    public static func scan(_ bytes: UnsafeRawBufferPointer) -> Summary? {
        var index = 0
        let end = bytes.count

        func skipWhitespace() {
            while index < end {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }
        /// At an opening quote: moves past the closing quote; returns the range inside the quotes.
        func skipString() -> Range<Int>? {
            index += 1
            let start = index
            while index < end {
                switch bytes[index] {
                case UInt8(ascii: "\\"): index += 2
                case UInt8(ascii: "\""):
                    index += 1
                    return start..<(index - 1)
                default: index += 1
                }
            }
            return nil
        }
        /// At the first byte of a value: moves past it; false if the input ends first.
        func skipValue() -> Bool {
            guard index < end else { return false }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return skipString() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while index < end {
                    switch bytes[index] {
                    case UInt8(ascii: "\""):
                        guard skipString() != nil else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            index += 1
                            return true
                        }
                    default: break
                    }
                    index += 1
                }
                return false
            default:
                let start = index
                while index < end {
                    switch bytes[index] {
                    case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D:
                        return index > start
                    default: index += 1
                    }
                }
                return index > start
            }
        }
        func equals(_ range: Range<Int>, _ text: StaticString) -> Bool {
            guard range.count == text.utf8CodeUnitCount else { return false }
            let expected = text.utf8Start
            for offset in 0..<range.count where bytes[range.lowerBound + offset] != expected[offset] { return false }
            return true
        }
        func integer(_ range: Range<Int>) -> Int? {
            guard !range.isEmpty else { return nil }
            var value = 0
            var position = range.lowerBound
            let negative = bytes[position] == UInt8(ascii: "-")
            if negative { position += 1 }
            guard position < range.upperBound, range.upperBound - position <= 18 else { return nil }
            while position < range.upperBound {
                let digit = bytes[position] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
                position += 1
            }
            return negative ? -value : value
        }

        skipWhitespace()
        guard index < end, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        var summary = Summary(id: nil, isError: false)
        skipWhitespace()
        if index < end, bytes[index] == UInt8(ascii: "}") { return summary }
        while true {
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: "\""), let key = skipString() else { return nil }
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            let valueStart = index
            guard skipValue() else { return nil }
            if equals(key, "id") {
                summary.id = integer(valueStart..<index)
            } else if equals(key, "error") {
                summary.isError = true
            }
            skipWhitespace()
            guard index < end else { return nil }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { return nil }
            return summary
        }
    }

    /// `scan` over an array of bytes (for tests and tools).
    public static func scan(_ bytes: [UInt8]) -> Summary? {
        bytes.withUnsafeBytes { scan($0) }
    }
}
