import RPCJSON
import Synchronization

/// Where the notifications the server sends unasked (frames with a `method` and no `id`: `rpc.event`,
/// `rpc.eventsLost`, `rpc.subscriptionEnded`) go, by method name. `RPCClientHandler` hands each such frame
/// here instead of treating it as an unexpected reply; a method nobody handles is dropped.
///
/// Handlers run on the connection's event loop, in frame order, and must return quickly. When the connection
/// ends, `connectionEnded` handlers run once. Thread-safe: register from anywhere.
package final class RPCServerNotifications: Sendable {
    private struct Handlers {
        var byMethod: [String: @Sendable (JSONValue?) -> Void] = [:]
        var onEnd: [@Sendable () -> Void] = []
    }

    private let handlers = Mutex(Handlers())

    package init() {}

    /// Sets (or, with nil, removes) the handler of notifications named `method`; it gets their `params`.
    package func handle(_ method: String, with handler: (@Sendable (JSONValue?) -> Void)?) {
        handlers.withLock { $0.byMethod[method] = handler }
    }

    /// Runs `handler` once when the connection ends.
    package func onConnectionEnded(_ handler: @escaping @Sendable () -> Void) {
        handlers.withLock { $0.onEnd.append(handler) }
    }

    /// A notification arrived: true when a handler took it.
    func deliver(method: String, params: JSONValue?) -> Bool {
        guard let handler = handlers.withLock({ $0.byMethod[method] }) else { return false }
        handler(params)
        return true
    }

    func connectionEnded() {
        let ended = handlers.withLock { handlers in
            defer { handlers.onEnd = [] }
            return handlers.onEnd
        }
        for handler in ended { handler() }
    }
}
