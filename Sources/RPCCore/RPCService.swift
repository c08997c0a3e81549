package import JSONRPC
package import Logging
package import NIOCore
package import RPCBinding
package import RPCJSON
package import RPCLogging
package import RPCMetrics
package import RPCProtocol

/// A service: one `service.*` namespace of methods behind one small interface.
///
/// `handle` is called on the connection's event loop and must not block it: answer at once, or start the work
/// elsewhere and answer later. The responder must be completed exactly once, from any thread; extra
/// completions are ignored (and logged). Notifications are handled like calls and their outcome is discarded.
/// Plugin modules and tests implement this directly; the built-in services through `RPCTypedService`, which
/// declares typed methods and binds params the way the module SDK does.
package protocol RPCService: Sendable {
    var descriptor: RPCServiceDescriptor { get }
    func handle(_ call: RPCCall, responder: RPCResponder)

    /// How the method at `methodIndex` answers when it is one that always answers on the spot on the calling
    /// thread (a typed service's methods but its suspending ones); nil when it is not, and its calls go
    /// through `handle`. Asked once per method when a registry is built (`RPCServiceRegistry.Route`), so a
    /// call reads the answer from its route instead of the service's method table. The router answers such
    /// calls without the state a call that may answer later needs (no pending call, no responder, no
    /// completion): they cannot be cancelled (`rpc.cancel` never finds them) and never count as in flight.
    /// Default: nil.
    func answerAtOnce(methodIndex: Int) -> RPCAtOnceMethod?
}

extension RPCService {
    package func answerAtOnce(methodIndex: Int) -> RPCAtOnceMethod? { nil }
}

/// How a method that always answers on the spot answers (`RPCService.answerAtOnce(methodIndex:)`).
package enum RPCAtOnceMethod: Sendable {
    /// The same result for every call, JSON text; the call must come without params (`rpcd.ping`), and no
    /// `RPCCall` is made for it.
    case constant(ByteBuffer)
    /// A body run on the calling thread with the call (the service it belongs to captured).
    case now(@Sendable (RPCCall) throws -> ByteBuffer)

    /// The answer to `request`; `call` makes the `RPCCall` for a body that wants one.
    @inlinable
    package func answer(_ request: RPCRequest, call: () -> RPCCall) -> RPCAnswer {
        do {
            return RPCAnswer(result: try result(request, call: call))
        } catch {
            return RPCAnswer(failure: error)
        }
    }

    /// The result of `request`, JSON text, or the error it fails with; `call` makes the `RPCCall` for a body
    /// that wants one. The router's own way in: a call that succeeds quietly, nearly every call, then makes
    /// no `RPCAnswer` (bench/README.md, "Issue 39, fourth step").
    @inlinable
    package func result(_ request: RPCRequest, call: () -> RPCCall) throws -> ByteBuffer {
        switch self {
        case .constant(let json):
            if request.params != nil { try RPCCall.requireNoParams(request.params) }
            return json
        case .now(let run):
            return try run(call())
        }
    }
}

/// A service with a state of its own worth reporting in `rpcd.info` (a module host process's: its pid, crashes
/// and restarts), under the service's `host` member.
package protocol RPCServiceStatusReporting: RPCService {
    var status: JSONValue { get }
}

/// One routed call, as a service sees it. Immutable; a class because it travels (into the service, its
/// closures, a module's pending state) and a reference costs one count where a struct of this many
/// references costs one per field at every copy.
package final class RPCCall: Sendable {
    /// The request as received; `params` are raw JSON bytes, decoded only by whoever needs them.
    package let request: RPCRequest
    /// Where the call was routed: its service, method and series.
    package let route: RPCServiceRegistry.Route
    package let connection: RPCConnectionInfo
    /// The loop of the connection; handlers may schedule work on it but never block it.
    package let eventLoop: any EventLoop
    /// The registry this call was routed through (what `rpc.discover` describes).
    package let registry: RPCServiceRegistry
    /// The router's state of the call, for cancellation; nil for a call answered at once.
    let pending: PendingCall?

    /// The connection's write side for events (what `rpc.subscribe` subscribes); nil where there is no
    /// connection to send them on (a test dispatching without one). Use only on `eventLoop`.
    package let output: (any RPCConnectionOutput)?

    /// Index of the method in the service descriptor's `methods`.
    package var methodIndex: Int { route.methodIndex }
    /// The method's descriptor, read from the route: a call keeps one reference to it, not a copy of every
    /// field (bench/README.md, "Issue 39, fourth step").
    package var method: RPCMethodDescriptor { route.method }

    init(
        request: RPCRequest, route: RPCServiceRegistry.Route, connection: RPCConnectionInfo,
        eventLoop: any EventLoop, registry: RPCServiceRegistry, output: (any RPCConnectionOutput)?,
        pending: PendingCall?
    ) {
        self.request = request
        self.route = route
        self.connection = connection
        self.eventLoop = eventLoop
        self.registry = registry
        self.output = output
        self.pending = pending
    }

    /// Registers `handler` to run if the caller gives up on this call: it sent `rpc.cancel`, or its
    /// connection ended. By then the caller has been answered -32011 and the call no longer counts against the
    /// connection's limits; the handler tells the work to stop (a module's `cancel`, a Swift task's
    /// `cancel()`), and the service's own answer, when it comes, is dropped. Runs at most once, on the call's
    /// event loop, and at once if the call is already cancelled; never after the call was answered. Must be
    /// called on the call's event loop (in `handle`, or later on that loop).
    package func onCancel(_ handler: @escaping () -> Void) {
        pending?.onCancel(handler)
    }

    /// `onCancel(_:)` for a service that knows its calls by tokens of its own: `target` is told `token` if the
    /// caller gives up on this call, under the same rules. Keeps the two beside the call's state instead of
    /// a closure made for the call (`RPCCancellationTarget`).
    package func onCancel(tell target: any RPCCancellationTarget, token: UInt64) {
        pending?.onCancel(tell: target, token: token)
    }

    package var params: ByteBuffer? { request.params }
    package var isNotification: Bool { request.isNotification }

    /// The connection's logger with this call's method and id attached.
    package var logger: Logger {
        var logger = connection.logger
        logger[metadataKey: LogField.method] = "\(request.method)"
        if let id = request.id { logger[metadataKey: LogField.callID] = "\(LogValue.truncated("\(id)"))" }
        return logger
    }
}

/// Who is calling: one client connection. Immutable, and a class: every call of the connection refers to it
/// (its routing, its pending state, the `RPCCall` a service gets), so a copy costs one reference, not one per
/// field.
package final class RPCConnectionInfo: Sendable {
    /// Unique within one run of the daemon.
    package let id: UInt64
    /// Who is calling: address, Unix credentials, certificate identities.
    package let peer: RPCPeer
    /// The server's logger, without this connection's fields.
    package let baseLogger: Logger
    /// What the calls of this connection's peer may log, shared by all of the peer's connections (nil: no
    /// limit). A peer can make calls fail or run slowly at will; it must not be able to flood the journal.
    package let peerLog: LogRateLimiter?
    /// This connection's calls awaiting their answer, by id (`rpc.cancel`). Touched only on the connection's
    /// event loop.
    package let inFlight = RPCInFlightCalls()
    /// What rpcd holds for this connection, charged to its peer (`PeerLedger`): everything that keeps bytes for
    /// the connection charges it, and closing the connection gives all of it back.
    package let account: PeerAccount
    /// The series of the listener the connection came through, where its bytes are counted (nil: a connection
    /// made outside a server).
    package let listener: RPCListenerMetrics?

    /// `baseLogger` with `rpcd_conn_id` and `rpcd_peer`. Made when something is logged, not per connection:
    /// most connections log nothing, and a logger with metadata of its own costs a heap box each.
    package var logger: Logger {
        var logger = baseLogger
        logger[metadataKey: LogField.connectionID] = "\(id)"
        logger[metadataKey: LogField.peer] = "\(peer)"
        if !peer.certificateIdentities.isEmpty {
            logger[metadataKey: LogField.tlsClient] = "\(peer.certificateIdentities.joined(separator: ","))"
        }
        return logger
    }

    /// `logger` is the server's logger; the connection's fields are added when it logs. Without an `account`
    /// (a connection made outside a server), nothing limits what it holds.
    package convenience init(id: UInt64, peer: RPCPeer, logger: Logger, peerLog: LogRateLimiter? = nil, account: PeerAccount? = nil) {
        self.init(id: id, peer: peer, logger: logger, peerLog: peerLog, account: account, listener: nil)
    }

    package init(
        id: UInt64, peer: RPCPeer, logger: Logger, peerLog: LogRateLimiter?, account: PeerAccount?,
        listener: RPCListenerMetrics?
    ) {
        self.listener = listener
        self.id = id
        self.peer = peer
        self.baseLogger = logger
        self.peerLog = peerLog
        self.account = account ?? PeerLedger.unlimitedAccount(for: peer)
    }

    /// `logger`, unless the peer's calls have logged their share for now (`peerLog`): then nil. The first entry
    /// after a suppressed stretch says how many were dropped (`rpcd_suppressed`).
    package var rateLimitedLogger: Logger? {
        guard let peerLog else { return logger }
        guard let suppressed = peerLog.admit() else { return nil }
        var logger = self.logger
        if suppressed > 0 { logger[metadataKey: LogField.suppressed] = "\(suppressed)" }
        return logger
    }
}

/// How a call ends.
package enum RPCOutcome: Sendable {
    /// The `result`, as raw JSON bytes.
    case success(ByteBuffer)
    case failure(RPCError)
}

/// How a call ended, with the error behind an internal error (`cause`, logged; clients see only -32603).
package struct RPCAnswer: Sendable {
    package var outcome: RPCOutcome
    package var cause: (any Error)?

    package init(_ outcome: RPCOutcome, cause: (any Error)?) {
        self.outcome = outcome
        self.cause = cause
    }

    /// Succeeded with `result`, raw JSON.
    package init(result: ByteBuffer) {
        self.outcome = .success(result)
        self.cause = nil
    }

    /// Failed with `error`; see `RPCError.init(from:)` for what the client sees.
    package init(failure error: any Error) {
        self.outcome = .failure(RPCError(from: error))
        self.cause = error is RPCError || error is RPCErrorConvertible ? nil : error
    }
}

/// Completes one call. Thread-safe; the first completion wins.
package struct RPCResponder: Sendable {
    private let sink: any RPCCompletionSink

    /// `complete` receives the outcome and, for failures that were not `RPCError`s, the original error so it can
    /// be logged (clients only see `internalError`).
    package init(_ complete: @escaping @Sendable (RPCOutcome, (any Error)?) -> Void) {
        self.sink = ClosureCompletionSink(complete)
    }

    /// The router's own: the call's state is the sink, so answering costs no closure per call.
    init(_ sink: any RPCCompletionSink) {
        self.sink = sink
    }

    private func complete(_ outcome: RPCOutcome, _ cause: (any Error)?) {
        sink.complete(outcome, cause)
    }

    /// Succeeds with a result that is already JSON. The bytes are not checked: they must be one valid JSON value.
    package func succeed(rawJSON: ByteBuffer) {
        complete(.success(rawJSON), nil)
    }

    /// Succeeds with `value`; a value JSON cannot carry (a NaN or infinite number) fails the call instead, as
    /// an internal error whose cause is logged.
    package func succeed(_ value: JSONValue) {
        do {
            complete(.success(ByteBuffer(bytes: try value.checkedSerialization())), nil)
        } catch {
            fail(error)
        }
    }

    /// Fails the call; see `RPCError.init(from:)` for what the client sees.
    package func fail(_ error: any Error) {
        complete(RPCAnswer(failure: error))
    }

    /// Completes the call with an answer made already.
    package func complete(_ answer: RPCAnswer) {
        complete(answer.outcome, answer.cause)
    }
}

/// Where an `RPCResponder` delivers the outcome.
protocol RPCCompletionSink: AnyObject, Sendable {
    func complete(_ outcome: RPCOutcome, _ cause: (any Error)?)
}

private final class ClosureCompletionSink: RPCCompletionSink {
    private let body: @Sendable (RPCOutcome, (any Error)?) -> Void

    init(_ body: @escaping @Sendable (RPCOutcome, (any Error)?) -> Void) {
        self.body = body
    }

    func complete(_ outcome: RPCOutcome, _ cause: (any Error)?) {
        body(outcome, cause)
    }
}
