import JSONRPC
import NIOCore
package import RPCBinding
package import RPCCore
import RPCJSON
import RPCProtocol

/// The built-in `rpc` service: `rpc.discover` describes every method of the registry the call was routed
/// through, so it is always current after a reload; `rpc.cancel` cancels one of the caller's own calls
/// (docs/PROTOCOL.md, "Cancellation"); `rpc.subscribe` and `rpc.unsubscribe` manage the calling
/// connection's event subscriptions (`RPCConnectionSubscriptions`).
package struct RPCDiscoverService: RPCTypedService {
    package init() {}

    package static let name = "rpc"
    package static let version = RPCDaemonVersion.version
    package static let summary = "Service discovery (OpenRPC) and event subscriptions"
    package let descriptor = Self.makeDescriptor()

    package static let methods: [RPCServiceMethod<RPCDiscoverService>] = [discover, cancel] + subscriptionMethods

    private static let discover: RPCServiceMethod<RPCDiscoverService> =
        .method(
            "discover", summary: "Returns an OpenRPC document describing every method the caller may call",
            result: RPCParam("document", schema: ["type": "object"]), flags: .readOnly
        ) { _, call in
            let access = call.registry.access
            return OpenRPCDocument.make(
                for: call.registry.services.map(\.descriptor),
                shows: { service, method in access.allows(call.connection.peer, service: service.name, method: method) },
                showsEvents: { service in access.allowsSubscribing(call.connection.peer, service: service.name) })
        }

    // Any peer may send it: it reaches only calls of the connection it arrives on.
    private static let cancel: RPCServiceMethod<RPCDiscoverService> =
        .method(
            "cancel", summary: "Cancels a call of this connection still in flight: it is answered -32011 at once",
            params: [RPCParam("id", schema: ["type": ["string", "number", "null"]], summary: "The id of the call")],
            result: .boolean("cancelled", summary: "Whether a call with that id was in flight"),
            flags: [.readOnly, .anyPeer]
        ) { (_, params: CancelParams, call) in
            // Ids compare as the JSON text the client sent (PROTOCOL.md): "\u0041" names no call sent as "A".
            let text = call.params.flatMap(Self.idText(in:)) ?? ByteBuffer(bytes: params.id.serialized())
            return call.connection.inFlight.cancel(id: RPCID(rawJSON: text))
        }

    struct CancelParams: Decodable {
        let id: JSONValue
    }

    /// The `id` param as it was written: the first element of a params array, or the member `id` of a params
    /// object. Params the binder accepted are valid JSON, so a scan that fails finds nothing.
    static func idText(in params: ByteBuffer) -> ByteBuffer? {
        let range = params.withUnsafeReadableBytes { bytes -> Range<Int>? in
            var scanner = JSONScanner(bytes: bytes, maxDepth: RPCLimits.clientMaxNestingDepth)
            if scanner.consume(UInt8(ascii: "[")) { return try? scanner.scanValue(depth: 1).range }
            guard scanner.consume(UInt8(ascii: "{")) else { return nil }
            repeat {
                guard let key = try? scanner.scanString(), scanner.consume(UInt8(ascii: ":")),
                    let value = try? scanner.scanValue(depth: 1)
                else { return nil }
                if JSONString.token(UnsafeRawBufferPointer(rebasing: bytes[key.range]), equals: "id") { return value.range }
            } while scanner.consume(UInt8(ascii: ","))
            return nil
        }
        return range.flatMap { params.getSlice(at: params.readerIndex + $0.lowerBound, length: $0.count) }
    }
}
