import RPCJSON
import RPCProtocol

/// Writes JSON-RPC 2.0 request and notification payloads (the bytes inside a frame).
///
/// The output is compact and member order is fixed: `{"jsonrpc":"2.0","method":M[,"params":P][,"id":N]}`.
package enum RPCRequestEncoding {
    /// Checks that `params` may be sent: JSON-RPC allows only an array or an object (or no params at all).
    package static func validate(params: JSONValue?) throws(RPCClientError) {
        switch params {
        case nil, .array?, .object?: return
        case let other?:
            throw .protocolViolation(
                "params must be an array or an object, not \(String(decoding: other.serialized(), as: UTF8.self))")
        }
    }

    /// A request with an integer id.
    package static func request(method: String, params: JSONValue?, id: Int) -> [UInt8] {
        var bytes = prefix(method: method, params: params)
        bytes.append(contentsOf: #","id":"#.utf8)
        bytes.append(contentsOf: String(id).utf8)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// A notification (no id: the server never answers it).
    package static func notification(method: String, params: JSONValue?) -> [UInt8] {
        var bytes = prefix(method: method, params: params)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// The notification that asks the server to cancel the call with integer id `id` (docs/PROTOCOL.md).
    package static func cancellation(of id: Int) -> [UInt8] {
        notification(method: RPCCancellation.method, params: ["id": .number(id)])
    }

    /// A batch array of requests with the given ids (`calls` and `ids` have the same length).
    package static func batch(_ calls: [(method: String, params: JSONValue?)], ids: [Int]) -> [UInt8] {
        precondition(calls.count == ids.count, "one id per call")
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, call) in calls.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: request(method: call.method, params: call.params, id: ids[index]))
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    /// Everything up to (not including) the `,"id":` member or the closing brace.
    static func prefix(method: String, params: JSONValue?) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        bytes.append(contentsOf: #"{"jsonrpc":"2.0","method":"#.utf8)
        JSONString.appendQuoted(method, to: &bytes)
        if let params {
            bytes.append(contentsOf: #","params":"#.utf8)
            bytes.append(contentsOf: params.serialized())
        }
        return bytes
    }
}
