import RPCJSON
import RPCProtocol

/// Decoding of reply objects: what a reply says and which call it answers.
package enum RPCReply {
    /// The id member of a reply object, as one of the client's integer ids; nil when absent, `null` or not an
    /// integer the client could have sent.
    static func clientID(of reply: JSONValue) -> Int? {
        guard case .object(let members) = reply, let id = members["id"], case .number = id else { return nil }
        return id.intValue
    }

    /// Whether the reply's id member is present and `null` (the server could not tell which call it answers).
    static func hasNullID(_ reply: JSONValue) -> Bool {
        guard case .object(let members) = reply, let id = members["id"] else { return false }
        return id == .null
    }

    /// The outcome a single reply object reports: its result, its error as `.remote`, or why it is not a
    /// valid JSON-RPC 2.0 reply.
    static func outcome(of reply: JSONValue) -> Result<JSONValue, RPCClientError> {
        guard case .object(let members) = reply else {
            return .failure(.protocolViolation("a reply must be an object, got \(abbreviated(reply))"))
        }
        guard members["jsonrpc"] == .string("2.0") else {
            return .failure(.protocolViolation("reply without \"jsonrpc\":\"2.0\": \(abbreviated(reply))"))
        }
        switch (members["result"], members["error"]) {
        case (let result?, nil):
            return .success(result)
        case (nil, let error?):
            guard case .object(let fields) = error, let code = fields["code"]?.intValue,
                let message = fields["message"]?.stringValue
            else {
                return .failure(.protocolViolation("malformed error object: \(abbreviated(error))"))
            }
            return .failure(.remote(RPCError(code: code, message: message, data: fields["data"])))
        case (nil, nil):
            return .failure(.protocolViolation("reply has neither \"result\" nor \"error\": \(abbreviated(reply))"))
        case (_?, _?):
            return .failure(.protocolViolation("reply has both \"result\" and \"error\": \(abbreviated(reply))"))
        }
    }

    /// Compact JSON text, cut to a length that fits in an error message.
    static func abbreviated(_ value: JSONValue, limit: Int = 200) -> String {
        abbreviated(bytes: value.serialized(), limit: limit)
    }

    package static func abbreviated(bytes: [UInt8], limit: Int = 200) -> String {
        if bytes.count <= limit { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes.prefix(limit), as: UTF8.self) + "… (\(bytes.count) bytes)"
    }
}
