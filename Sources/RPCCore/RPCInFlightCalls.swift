package import JSONRPC
import RPCJSON

/// The calls of one connection that have an id and no answer yet, so that `rpc.cancel` can find one by its id
/// and a closed connection can cancel them all.
///
/// Confined to the connection's event loop, like everything else about the connection: the router adds and
/// removes calls there, `rpc.cancel` runs there, and the connection handler cancels what is left there when
/// the connection ends. (Hence `@unchecked Sendable`: it travels inside the immutable `RPCConnectionInfo`, but
/// is only touched on that loop.) Ids compare as the JSON text the client sent; two calls in flight with the
/// same id are the client's mistake, and only the later one can be cancelled.
package final class RPCInFlightCalls: @unchecked Sendable {
    /// An empty dictionary allocates nothing: an idle connection pays for this object only.
    private var calls: [RPCID: PendingCall] = [:]

    package init() {}

    /// Calls of this connection with an id and no answer yet.
    package var count: Int { calls.count }

    func add(_ id: RPCID, _ call: PendingCall) {
        calls[id] = call
    }

    func remove(_ id: RPCID, _ call: PendingCall) {
        if calls[id] === call { calls[id] = nil }
    }

    /// Cancels the call with `id`: it is answered -32011 at once and its service is told. Returns false when no
    /// call with that id is in flight (unknown, or answered already): then nothing happens.
    @discardableResult
    package func cancel(id: RPCID) -> Bool {
        guard let call = calls[id] else { return false }
        call.cancel()
        return true
    }

    /// Cancels every call in flight: the connection ended, so their -32011 answers go nowhere.
    package func cancelAll() {
        let all = calls.values
        calls = [:]
        for call in all { call.cancel() }
    }
}
