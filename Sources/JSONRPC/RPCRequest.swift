package import NIOCore
package import RPCProtocol

/// One request or notification, as routed: the method name decoded, params and id kept as raw JSON bytes.
package struct RPCRequest: Sendable {
    /// The full method name, e.g. `calc.add`.
    package var method: String
    /// The raw JSON of `params` (an object or an array), or nil when the member was absent.
    package var params: ByteBuffer?
    /// The request id, or nil for a notification (which never gets a reply).
    package var id: RPCID?

    package init(method: String, params: ByteBuffer? = nil, id: RPCID?) {
        self.method = method
        self.params = params
        self.id = id
    }

    package var isNotification: Bool { id == nil }
}

/// One element of an incoming message after envelope validation.
package enum RPCEntry: Sendable {
    /// A well-formed request or notification, to be routed.
    case request(RPCRequest)
    /// A malformed request object (or non-object batch element); it is answered with `error`, under `id`
    /// when the id could be read and `null` otherwise, even if it lacked an id.
    case invalid(id: RPCID?, error: RPCError)
}

/// What one frame's payload turned out to be.
package enum RPCMessage: Sendable {
    /// A single request object (possibly invalid).
    case single(RPCEntry)
    /// A non-empty batch array, its entries in order.
    case batch([RPCEntry])
    /// The frame as a whole is unusable (not JSON, empty batch, too deep, too many entries): one error reply
    /// with id null.
    case failure(RPCError)
}
