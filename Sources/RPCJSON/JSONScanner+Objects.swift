// Objects read member by member, for readers that look at a few members and only validate the others.

extension JSONScanner {
    /// One member of an object, as byte ranges into `bytes`.
    public struct Member {
        /// The name's string token, quotes included.
        public var name: Range<Int>
        /// Whether the name has escapes to resolve (`JSONString.decode`, `JSONString.token(_:equals:)`).
        public var nameHasEscapes: Bool
        public var kind: JSONKind
        /// The value, without surrounding whitespace (as `scanValue` reports it).
        public var value: Range<Int>
    }

    /// Consumes the `{` that comes next after whitespace, opening an object enclosed by `depth` containers;
    /// returns false when the object is empty (its `}` consumed too). Throws `.tooDeep(limit: maxDepth)` at
    /// the `{` when the object's level, `depth + 1`, is above `maxDepth`, as `scanValue` would.
    public mutating func openObject(depth: Int) throws(JSONSyntaxError) -> Bool {
        guard peekNonWhitespace() == UInt8(ascii: "{") else { throw unexpectedHere() }
        guard depth < maxDepth else { throw JSONSyntaxError(reason: .tooDeep(limit: maxDepth), offset: offset) }
        offset &+= 1
        return !consume(UInt8(ascii: "}"))
    }

    /// Scans the next member of an object that `openObject(depth:)` opened, `"name": value`, and the `,` or
    /// `}` after it; `isLast` tells that it was the `}`. The value is validated as `scanValue(depth: depth + 1)`
    /// does. One call per member keeps the scan's small steps together, where they are cheapest.
    public mutating func scanMember(depth: Int) throws(JSONSyntaxError) -> (member: Member, isLast: Bool) {
        // `scanMemberName` and `scanValue` written out, so that their fast paths share one frame.
        skipWhitespace()
        let nameStart = offset
        guard nameStart < bytes.count && bytes[nameStart] == UInt8(ascii: "\"") else { throw unexpectedHere() }
        let nameHasEscapes = try scanStringBody()
        let name = nameStart..<offset
        guard consume(UInt8(ascii: ":")) else { throw unexpectedHere() }
        skipWhitespace()
        let valueStart = offset
        guard valueStart < bytes.count else { throw JSONSyntaxError(reason: .unexpectedEnd, offset: valueStart) }
        let first = bytes[valueStart]
        let kind: JSONKind
        switch first {
        case UInt8(ascii: "\""):
            _ = try scanStringBody()
            kind = .string
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try scanContainer(depth: depth + 1)
            kind = first == UInt8(ascii: "{") ? .object : .array
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try scanNumber()
            kind = .number
        default:
            kind = try scanScalar(first)
        }
        let member = Member(name: name, nameHasEscapes: nameHasEscapes, kind: kind, value: valueStart..<offset)
        switch peekNonWhitespace() {
        case UInt8(ascii: ","):
            offset &+= 1
            return (member, false)
        case UInt8(ascii: "}"):
            offset &+= 1
            return (member, true)
        default:
            throw unexpectedHere()
        }
    }

    /// Consumes `byte` after whitespace or throws the syntax error a parser would report there.
    public mutating func expect(_ byte: UInt8) throws(JSONSyntaxError) {
        guard consume(byte) else { throw unexpectedHere() }
    }

    /// The error for a next non-whitespace byte the grammar does not allow: that byte, or the end of the input.
    private mutating func unexpectedHere() -> JSONSyntaxError {
        JSONSyntaxError(reason: peekNonWhitespace().map { .unexpectedByte($0) } ?? .unexpectedEnd, offset: offset)
    }

    /// Scans `"name" :`, the start of a member; returns the name's token as `scanString` does.
    mutating func scanMemberName() throws(JSONSyntaxError) -> (range: Range<Int>, hasEscapes: Bool) {
        let name = try scanString()
        try expect(UInt8(ascii: ":"))
        return name
    }
}
