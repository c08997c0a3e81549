import NIOCore
import RPCJSON

/// The notifications the server sends about subscriptions (docs/PROTOCOL.md, "Events"):
///
///     {"jsonrpc":"2.0","method":"rpc.event","params":{"subscription":1,"event":"kv.changed","seq":7,"data":…}}
///     {"jsonrpc":"2.0","method":"rpc.eventsLost","params":{"subscription":1,"count":3}}
///     {"jsonrpc":"2.0","method":"rpc.subscriptionEnded","params":{"subscription":1,"reason":"service removed"}}
///
/// Event names follow the service and member name rules (nothing to escape); `data` is a payload its
/// publisher checked to be one JSON value, written as it is.
enum RPCEventFrame {
    static func event(subscription: Int, name: String, seq: Int, data: ByteBuffer) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(96 + name.utf8.count + data.readableBytes)
        buffer.writeStaticString(#"{"jsonrpc":"2.0","method":"rpc.event","params":{"subscription":"#)
        buffer.writeString(String(subscription))
        buffer.writeStaticString(#","event":""#)
        buffer.writeString(name)
        buffer.writeStaticString(#"","seq":"#)
        buffer.writeString(String(seq))
        buffer.writeStaticString(#","data":"#)
        buffer.writeImmutableBuffer(data)
        buffer.writeStaticString("}}")
        return buffer
    }

    static func eventsLost(subscription: Int, count: Int) -> ByteBuffer {
        notification("rpc.eventsLost", ["subscription": .number(subscription), "count": .number(count)])
    }

    static func subscriptionEnded(subscription: Int, reason: String) -> ByteBuffer {
        notification("rpc.subscriptionEnded", ["subscription": .number(subscription), "reason": .string(reason)])
    }

    private static func notification(_ method: String, _ params: JSONValue) -> ByteBuffer {
        let message: JSONValue = ["jsonrpc": "2.0", "method": .string(method), "params": params]
        return ByteBuffer(bytes: message.serialized())
    }
}
