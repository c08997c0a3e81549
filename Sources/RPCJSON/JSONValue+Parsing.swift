extension JSONValue {
    /// Parses a complete JSON text (whitespace allowed around it, nothing else).
    ///
    /// The text is first validated by `JSONScanner`, so the same strictness applies and containers nested
    /// deeper than `maxDepth` throw `.tooDeep`. Building is iterative too: no input can overflow the stack.
    /// Repeated object keys keep the last value.
    public init(parsing bytes: UnsafeRawBufferPointer, maxDepth: Int = 512) throws(JSONSyntaxError) {
        var scanner = JSONScanner(bytes: bytes, maxDepth: maxDepth)
        _ = try scanner.scanValue(depth: 0)
        try scanner.expectEnd()
        scanner.offset = 0
        var builder = TreeBuilder(scanner: scanner)
        self = try builder.build()
    }

    public init(parsing bytes: [UInt8], maxDepth: Int = 512) throws(JSONSyntaxError) {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONSyntaxError) in try JSONValue(parsing: buffer, maxDepth: maxDepth) }
        }
        self = try result.get()
    }

    public init(parsing text: String, maxDepth: Int = 512) throws(JSONSyntaxError) {
        var text = text
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONSyntaxError) in
                try JSONValue(parsing: UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
            }
        }
        self = try result.get()
    }
}

/// Builds a tree from already validated input, keeping open containers on an explicit stack.
private struct TreeBuilder {
    /// An open container. A struct rather than an enum so elements are appended in place without copying.
    struct Frame {
        var isObject: Bool
        var elements: [JSONValue] = []
        var members: [String: JSONValue] = [:]
        var pendingKey = ""
    }

    var scanner: JSONScanner
    var stack: [Frame] = []

    mutating func build() throws(JSONSyntaxError) -> JSONValue {
        valueLoop: while true {
            var value: JSONValue
            switch scanner.peekNonWhitespace() {
            case UInt8(ascii: "["):
                scanner.offset += 1
                if scanner.consume(UInt8(ascii: "]")) {
                    value = .array([])
                } else {
                    stack.append(Frame(isObject: false))
                    continue valueLoop
                }
            case UInt8(ascii: "{"):
                scanner.offset += 1
                if scanner.consume(UInt8(ascii: "}")) {
                    value = .object([:])
                } else {
                    // Room for a few members from the start: a small object (call params, most often) then
                    // costs one allocation, not one per doubling of its table.
                    stack.append(Frame(isObject: true, members: Dictionary(minimumCapacity: 4), pendingKey: try memberName()))
                    continue valueLoop
                }
            default:
                value = try scalar()
            }
            // Attach the finished value to its parent, closing parents the input closes.
            while !stack.isEmpty {
                let top = stack.count - 1
                if stack[top].isObject {
                    let key = stack[top].pendingKey
                    stack[top].members[key] = value
                } else {
                    stack[top].elements.append(value)
                }
                if scanner.consume(UInt8(ascii: ",")) {
                    if stack[top].isObject { stack[top].pendingKey = try memberName() }
                    continue valueLoop
                }
                scanner.offset += 1  // the validated closing bracket
                let frame = stack.removeLast()
                value = frame.isObject ? .object(frame.members) : .array(frame.elements)
            }
            return value
        }
    }

    private mutating func memberName() throws(JSONSyntaxError) -> String {
        let (range, _) = try scanner.scanString()
        _ = scanner.consume(UInt8(ascii: ":"))
        return JSONString.decode(UnsafeRawBufferPointer(rebasing: scanner.bytes[range]))
    }

    private mutating func scalar() throws(JSONSyntaxError) -> JSONValue {
        let (kind, range) = try scanner.scanValue(depth: 0)
        let token = UnsafeRawBufferPointer(rebasing: scanner.bytes[range])
        switch kind {
        case .string: return .string(JSONString.decode(token))
        case .number: return .number(String(decoding: token, as: UTF8.self))
        case .bool: return .bool(token.first == UInt8(ascii: "t"))
        case .null, .array, .object: return .null  // containers never reach here: the caller handles them
        }
    }
}

/// How a JSON text's top level came out of `JSONValue.visitTopLevel`.
public enum JSONTopLevel: Sendable {
    /// An object; its members went to the visitor, keyed.
    case object
    /// An array; its elements went to the visitor, without keys.
    case array
    /// Any other value, which is here.
    case scalar(JSONValue)
}

extension JSONValue {
    /// Parses a complete JSON text like `init(parsing:)` (the same validation and limits), but an object's
    /// members or an array's elements go to `visit` one by one, in order (repeated keys included), and the
    /// container itself is never built: for readers that sort the members into places of their own, such as
    /// call params bound to declared parameters, and would otherwise pay for a dictionary and throw it away.
    public static func visitTopLevel(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int = 512, _ visit: (_ key: String?, _ value: JSONValue) throws -> Void
    ) throws -> JSONTopLevel {
        var scanner = JSONScanner(bytes: bytes, maxDepth: maxDepth)
        _ = try scanner.scanValue(depth: 0)
        try scanner.expectEnd()
        // Valid from here on: the walk below reads tokens without checking them again.
        scanner.offset = 0
        let open = scanner.peekNonWhitespace()
        guard open == UInt8(ascii: "{") || open == UInt8(ascii: "[") else {
            var builder = TreeBuilder(scanner: scanner)
            return .scalar(try builder.build())
        }
        let isObject = open == UInt8(ascii: "{")
        scanner.offset += 1
        if scanner.consume(isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) { return isObject ? .object : .array }
        repeat {
            var key: String?
            if isObject {
                let (range, _) = try scanner.scanString()
                _ = scanner.consume(UInt8(ascii: ":"))
                key = JSONString.decode(UnsafeRawBufferPointer(rebasing: scanner.bytes[range]))
            }
            var builder = TreeBuilder(scanner: scanner)
            let value = try builder.build()
            scanner.offset = builder.scanner.offset
            try visit(key, value)
        } while scanner.consume(UInt8(ascii: ","))
        return isObject ? .object : .array
    }
}
