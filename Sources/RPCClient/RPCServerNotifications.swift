import RPCJSON
import Synchronization

/// Where the notifications the server sends unasked (frames with a `method` and no `id`: `rpc.event`,
/// `rpc.eventsLost`, `rpc.subscriptionEnded`) go, by method name. `RPCClientHandler` hands each such frame
/// here instead of treating it as an unexpected reply; a method nobody handles is dropped.
///
/// Handlers run on the connection's event loop, in frame order, and must return quickly. When the connection
/// ends, `connectionEnded` handlers run once. `rpc.goingAway` is the handler's own (it fails the calls after
/// the cut): it tells this hub only that the server is leaving, and which notifications did not run; from
/// then on `hasGoneAway` is true. Thread-safe: register from anywhere.
package final class RPCServerNotifications: Sendable {
    private struct Handlers {
        var byMethod: [String: @Sendable (JSONValue?) -> Void] = [:]
        var onEnd: [@Sendable () -> Void] = []
        var onGoingAway: [@Sendable ([[UInt8]]) -> Void] = []
        var goneAway = false
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

    /// Runs `handler` once when the server says it is leaving the connection (`rpc.goingAway`, or a -32006
    /// reply), with the payloads of the notifications sent after the cut (they did not run).
    package func onGoingAway(_ handler: @escaping @Sendable ([[UInt8]]) -> Void) {
        handlers.withLock { $0.onGoingAway.append(handler) }
    }

    /// Whether the server has said it is leaving: the connection takes no new calls.
    package var hasGoneAway: Bool { handlers.withLock { $0.goneAway } }

    /// The server is leaving; `unsent` are the notifications it did not run.
    func goneAway(unsent: [[UInt8]] = []) {
        let handlers = handlers.withLock { handlers -> [@Sendable ([[UInt8]]) -> Void] in
            handlers.goneAway = true
            defer { handlers.onGoingAway = [] }
            return handlers.onGoingAway
        }
        for handler in handlers { handler(unsent) }
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
