import RPCBinding
import RPCCore
import RPCJSON
import RPCProtocol

/// `rpc.subscribe` and `rpc.unsubscribe` (docs/PROTOCOL.md, "Events"). Both only touch the calling
/// connection's own subscriptions, so they are read-only, as `rpc.discover`: whether the peer may receive a
/// service's events is the access rules' decision at `subscribe`, made as for a read-only method of it.
extension RPCDiscoverService {
    static let subscriptionMethods: [RPCServiceMethod<RPCDiscoverService>] = [
        .method(
            "subscribe", summary: "Subscribes this connection to an event; events arrive as rpc.event notifications",
            params: [
                RPCParam("event", schema: ["type": "string"], summary: "The full event name, e.g. kv.changed"),
                RPCParam("filter", schema: ["type": "object"], optional: true, summary: "Reserved; no service supports one yet"),
            ],
            result: RPCParam("subscription", schema: subscriptionSchema), flags: .readOnly
        ) { (_, params: Subscribe, call) in
            // No service declares a filter yet: refusing one keeps a client from believing it applies.
            if params.filter != nil { throw RPCError.invalidParams("'\(params.event)' supports no filter") }
            guard let subscriptions = call.output?.subscriptions else {
                throw RPCError.invalidParams(
                    "this connection cannot receive events (an HTTP request gets its response only: subscribe over WebSocket or a framed connection)")
            }
            let id = try subscriptions.subscribe(params.event, registry: call.registry)
            return Subscribed(subscription: id, event: params.event)
        },
        .method(
            "unsubscribe", summary: "Ends one of this connection's subscriptions; false when there is no such subscription",
            params: [RPCParam("subscription", schema: ["type": "integer"])],
            result: RPCParam("ended", schema: ["type": "boolean"]), flags: .readOnly
        ) { (_, params: Unsubscribe, call) in
            call.output?.subscriptions?.unsubscribe(params.subscription) ?? false
        },
    ]

    private static let subscriptionSchema: JSONValue = [
        "type": "object",
        "properties": ["subscription": ["type": "integer"], "event": ["type": "string"]],
        "required": ["subscription", "event"],
    ]

    private struct Subscribe: Decodable {
        var event: String
        var filter: JSONValue?
    }

    private struct Unsubscribe: Decodable {
        var subscription: Int
    }

    private struct Subscribed: Encodable {
        var subscription: Int
        var event: String
    }
}
