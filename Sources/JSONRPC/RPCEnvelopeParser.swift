package import NIOCore
import RPCJSON
package import RPCProtocol

/// Turns one frame's payload into an `RPCMessage` by reading only the JSON-RPC envelope.
///
/// The whole payload is validated as strict JSON (so a syntax error anywhere is a parse error, as the
/// specification requires), but only `jsonrpc`, `method` and `id` are decoded; `params` and `id` are handed on
/// as slices of the frame, without copying and without building a tree. Nesting is tracked without recursion,
/// so hostile depth is answered with an error instead of overflowing a stack.
///
/// Pure and thread-agnostic; never throws (every failure is a message to answer).
package struct RPCEnvelopeParser: Sendable {
    /// Deepest container nesting of a whole message; the request object itself is level 1.
    package var maxNestingDepth: Int
    /// Most entries a batch may have.
    package var maxBatchLength: Int

    package init(
        maxNestingDepth: Int = RPCLimits.maxNestingDepth.defaultValue,
        maxBatchLength: Int = RPCLimits.maxBatchLength.defaultValue
    ) {
        self.maxNestingDepth = maxNestingDepth
        self.maxBatchLength = maxBatchLength
    }

    /// The parser `limits` ask for (`MaxNestingDepth=`, `MaxBatchLength=`).
    package init(limits: ConnectionLimits) {
        self.init(maxNestingDepth: limits.maxNestingDepth, maxBatchLength: limits.maxBatchLength)
    }

    package func parse(_ frame: ByteBuffer) -> RPCMessage {
        frame.withUnsafeReadableBytes { bytes in
            var scanner = JSONScanner(bytes: bytes, maxDepth: maxNestingDepth)
            do {
                switch scanner.peekNonWhitespace() {
                case UInt8(ascii: "{"):
                    let entry = try parseObject(&scanner, depth: 0, frame: frame)
                    try scanner.expectEnd()
                    return .single(entry)
                case UInt8(ascii: "["):
                    return try parseBatch(&scanner, frame: frame)
                case nil:
                    return .failure(.parseError("empty message"))
                default:
                    _ = try scanner.scanValue(depth: 0)
                    try scanner.expectEnd()
                    return .failure(.invalidRequest("a message must be a request object or a batch array"))
                }
            } catch let error as JSONSyntaxError {
                return .failure(Self.rpcError(for: error, limit: maxNestingDepth))
            } catch {
                return .failure(.internalError)  // unreachable: the scanner throws only JSONSyntaxError
            }
        }
    }

    private static func rpcError(for error: JSONSyntaxError, limit: Int) -> RPCError {
        if case .tooDeep = error.reason { return .nestingTooDeep(limit: limit) }
        return .parseError(error.description)
    }

    private func parseBatch(_ scanner: inout JSONScanner, frame: ByteBuffer) throws(JSONSyntaxError) -> RPCMessage {
        _ = scanner.consume(UInt8(ascii: "["))
        if scanner.consume(UInt8(ascii: "]")) {
            try scanner.expectEnd()
            return .failure(.invalidRequest("a batch must not be empty"))
        }
        var entries: [RPCEntry] = []
        repeat {
            guard entries.count < maxBatchLength else {
                // Refuse before scanning the rest: a huge batch costs no more than its first entries.
                return .failure(.batchTooLarge(limit: maxBatchLength))
            }
            if scanner.peekNonWhitespace() == UInt8(ascii: "{") {
                entries.append(try parseObject(&scanner, depth: 1, frame: frame))
            } else {
                _ = try scanner.scanValue(depth: 1)
                entries.append(.invalid(id: nil, error: .invalidRequest("a batch element must be a request object")))
            }
        } while scanner.consume(UInt8(ascii: ","))
        try scanner.expect(UInt8(ascii: "]"))
        try scanner.expectEnd()
        return .batch(entries)
    }

    /// Parses one request object at `depth` (number of enclosing containers), in a single pass: each member
    /// value is validated by the scanner, but only the envelope members are looked at.
    private func parseObject(
        _ scanner: inout JSONScanner, depth: Int, frame: ByteBuffer
    ) throws(JSONSyntaxError) -> RPCEntry {
        var members = EnvelopeMembers()
        var duplicate: StaticString?
        var isLast = !(try scanner.openObject(depth: depth))
        while !isLast {
            let member: JSONScanner.Member
            (member, isLast) = try scanner.scanMember(depth: depth)
            let key = UnsafeRawBufferPointer(rebasing: scanner.bytes[member.name])
            if let name = EnvelopeMembers.Name(key, hasEscapes: member.nameHasEscapes),
                let repeated = members.assign(name, value: (member.kind, member.value))
            {
                duplicate = repeated
            }
        }
        return members.entry(bytes: scanner.bytes, frame: frame, duplicate: duplicate)
    }
}

/// The envelope members found in one request object, as kinds and byte ranges.
private struct EnvelopeMembers {
    typealias Member = (kind: JSONKind, range: Range<Int>)
    var jsonrpc: Member?
    var method: Member?
    var params: Member?
    var id: Member?

    /// The four member names of the envelope; every other member is allowed and ignored.
    enum Name: CaseIterable {
        case jsonrpc, method, params, id

        /// The envelope member `key` (a validated string token, quotes included) names, if any. A key without
        /// escapes, nearly every key, is told by its length and one or two word compares; one with escapes is
        /// decoded and compared.
        init?(_ key: UnsafeRawBufferPointer, hasEscapes: Bool) {
            guard !hasEscapes else {
                guard let name = Self.allCases.first(where: { JSONString.token(key, equals: $0.text) }) else { return nil }
                self = name
                return
            }
            // The little-endian words of the tokens' bytes: `"id"`, `"method"`, `"params"`, and `"jsonrpc` then `"`.
            switch key.count {
            case 4 where UInt32(littleEndian: key.loadUnaligned(as: UInt32.self)) == 0x2264_6922: self = .id
            case 8:
                switch UInt64(littleEndian: key.loadUnaligned(as: UInt64.self)) {
                case 0x2264_6F68_7465_6D22: self = .method
                case 0x2273_6D61_7261_7022: self = .params
                default: return nil
                }
            case 9 where UInt64(littleEndian: key.loadUnaligned(as: UInt64.self)) == 0x6370_726E_6F73_6A22 && key[8] == UInt8(ascii: "\""):
                self = .jsonrpc
            default: return nil
            }
        }

        var text: StaticString {
            switch self {
            case .jsonrpc: "jsonrpc"
            case .method: "method"
            case .params: "params"
            case .id: "id"
            }
        }
    }

    /// Records a member; returns its name when it was already present.
    mutating func assign(_ name: Name, value: Member) -> StaticString? {
        func set(_ slot: inout Member?) -> StaticString? {
            defer { slot = value }
            return slot == nil ? nil : name.text
        }
        switch name {
        case .jsonrpc: return set(&jsonrpc)
        case .method: return set(&method)
        case .params: return set(&params)
        case .id: return set(&id)
        }
    }

    func entry(bytes: UnsafeRawBufferPointer, frame: ByteBuffer, duplicate: StaticString?) -> RPCEntry {
        func slice(_ range: Range<Int>) -> ByteBuffer {
            frame.getSlice(at: frame.readerIndex + range.lowerBound, length: range.count)!
        }
        // The id is echoed in error replies whenever it is a valid id, so clients can match them up.
        var requestID: RPCID?
        if let id {
            switch id.kind {
            case .string, .number, .null: requestID = RPCID(rawJSON: slice(id.range))
            default: return .invalid(id: nil, error: .invalidRequest("'id' must be a string, a number or null"))
            }
        }
        func invalid(_ detail: String) -> RPCEntry { .invalid(id: requestID, error: .invalidRequest(detail)) }

        if let duplicate {
            // With two ids, which one the client will match on is unknowable: the specification's "error in
            // detecting the id" case, answered with a null id.
            let echoed = "\(duplicate)" == "id" ? nil : requestID
            return .invalid(id: echoed, error: .invalidRequest("member '\(duplicate)' appears more than once"))
        }
        guard let jsonrpc, jsonrpc.kind == .string, Self.isVersion(UnsafeRawBufferPointer(rebasing: bytes[jsonrpc.range]))
        else { return invalid("'jsonrpc' must be exactly \"2.0\"") }
        guard let method else { return invalid("'method' is missing") }
        guard method.kind == .string else { return invalid("'method' must be a string") }
        var params: ByteBuffer?
        if let member = self.params {
            guard member.kind == .object || member.kind == .array else {
                return invalid("'params' must be an object or an array")
            }
            params = slice(member.range)
        }
        let name = JSONString.decode(UnsafeRawBufferPointer(rebasing: bytes[method.range]))
        return .request(RPCRequest(method: name, params: params, id: requestID))
    }

    /// Whether a string token is `"2.0"`: byte for byte nearly always, decoded when it is written with escapes.
    private static func isVersion(_ token: UnsafeRawBufferPointer) -> Bool {
        if token.count == 5 && UInt32(littleEndian: token.loadUnaligned(as: UInt32.self)) == 0x302E_3222 && token[4] == UInt8(ascii: "\"") {
            return true
        }
        return token.count > 5 && JSONString.token(token, equals: "2.0")
    }
}
