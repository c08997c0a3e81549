import Logging
import NIOCore
import RPCLogging
import RPCProtocol
import Synchronization

/// The connections of one `RPCClient`: a fixed number of slots, each connected to one of the endpoints or
/// (re)connecting, and the policy that spreads calls over them.
///
/// **Policy.** Slot *i* starts at endpoint *i* mod *n* (endpoints in the order given, or as discovery lists
/// them), so with as many connections as endpoints every endpoint gets one. Calls take the slots in turn
/// (round-robin). A slot whose connection breaks reconnects on the next call that picks it: first to the
/// endpoint it had (a restarted daemon is back), then to each of the others in order (failover); calls in
/// flight on the broken connection fail with `.connectionClosed`. When no endpoint answers, a call waits and
/// retries (50 ms, doubling up to 1 s) until its deadline, and without a deadline fails at once with the last
/// `.connectFailed`. An endpoint that disappears from the list (discovery) has its connections closed; their
/// slots move to the endpoints that remain. A connection whose server says it is leaving (`rpc.goingAway`)
/// takes no new calls: its slot reconnects as a broken one does, while the calls it accepted finish on it; the
/// notifications it did not run are sent again on the next connection, made within `reconnectFor`.
/// Thread-safe.
final class RPCConnectionPool: Sendable {
    typealias Connector = @Sendable (any RPCClientTransport) async throws(RPCClientError) -> RPCConnection

    private enum Slot {
        case idle(preferred: String?)
        case connecting(Task<Result<RPCConnection, RPCClientError>, Never>)
        case connected(RPCConnection)
    }

    private struct State {
        var endpoints: [any RPCClientTransport]
        var slots: [Slot]
        var next = 0
        var closed = false
    }

    private let state: Mutex<State>
    private let connector: Connector
    private let logger: Logger
    private let reconnectFor: Duration

    init(
        endpoints: [any RPCClientTransport], connections: Int, reconnectFor: Duration, logger: Logger,
        connector: @escaping Connector
    ) {
        let count = max(1, connections)
        let slots = (0..<count).map { index in Slot.idle(preferred: Self.name(at: index, in: endpoints)) }
        self.state = Mutex(State(endpoints: endpoints, slots: slots))
        self.connector = connector
        self.logger = logger
        self.reconnectFor = reconnectFor
    }

    /// Whether `close()` was called: no connection will be made any more.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// The endpoints connections are made to, in order.
    var endpoints: [any RPCClientTransport] { state.withLock { $0.endpoints } }

    /// The name of the endpoint slot `index` starts at: the policy's *i* mod *n*.
    private static func name(at index: Int, in endpoints: [any RPCClientTransport]) -> String? {
        endpoints.isEmpty ? nil : endpoints[index % endpoints.count].name
    }

    /// The connections open now (for `isConnected` and tests).
    var openConnections: [RPCConnection] {
        state.withLock { state in
            state.slots.compactMap { slot in
                if case .connected(let connection) = slot, connection.isConnected { connection } else { nil }
            }
        }
    }

    /// A connection for the next call: the next slot's, connecting it first if needed, and retrying until
    /// `deadline` (see the type's policy).
    func connection(until deadline: ContinuousClock.Instant?) async throws(RPCClientError) -> RPCConnection {
        let index = state.withLock { state -> Int in
            defer { state.next &+= 1 }
            return state.next % state.slots.count
        }
        var backoff = Duration.milliseconds(50)
        while true {
            let attempt: Task<Result<RPCConnection, RPCClientError>, Never>
            switch attemptFor(slot: index) {
            case .failure(let error): throw error
            case .success(.ready(let connection)): return connection
            case .success(.pending(let task)): attempt = task
            }
            let failure: RPCClientError
            switch await attempt.value {
            case .success(let connection): return connection
            case .failure(let error): failure = error
            }
            if Task.isCancelled { throw .cancelled }
            guard let deadline, ContinuousClock.now + backoff < deadline else { throw failure }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(1))
        }
    }

    private enum Attempt {
        case ready(RPCConnection)
        case pending(Task<Result<RPCConnection, RPCClientError>, Never>)
    }

    /// The slot's open connection, its connection attempt under way, or a new attempt.
    private func attemptFor(slot index: Int) -> Result<Attempt, RPCClientError> {
        state.withLock { state -> Result<Attempt, RPCClientError> in
            guard !state.closed else { return .failure(.connectionClosed) }
            guard !state.endpoints.isEmpty else {
                return .failure(.connectFailed(endpoint: "(no endpoint)", reason: "no instance is known yet"))
            }
            var preferred: String?
            switch state.slots[index] {
            case .connected(let connection) where connection.isUsable:
                return .success(.ready(connection))
            case .connected(let connection):
                preferred = connection.transport.name
            case .connecting(let task):
                return .success(.pending(task))
            case .idle(let endpoint):
                preferred = endpoint
            }
            let order = Self.order(state.endpoints, startingAt: preferred)
            let task = Task { await self.connect(slot: index, trying: order) }
            state.slots[index] = .connecting(task)
            return .success(.pending(task))
        }
    }

    /// `endpoints` rotated to start at the one named `preferred` (or as they are, when it is not among them).
    static func order(_ endpoints: [any RPCClientTransport], startingAt preferred: String?) -> [any RPCClientTransport] {
        guard let preferred, let start = endpoints.firstIndex(where: { $0.name == preferred }) else { return endpoints }
        return Array(endpoints[start...] + endpoints[..<start])
    }

    /// Tries each endpoint in `order` once; files the connection (or the failure) in the slot.
    private func connect(slot index: Int, trying order: [any RPCClientTransport]) async -> Result<RPCConnection, RPCClientError> {
        var lastError = RPCClientError.connectionClosed
        for endpoint in order {
            do throws(RPCClientError) {
                let connection = try await connector(endpoint)
                let kept = state.withLock { state -> Bool in
                    guard !state.closed, state.endpoints.contains(where: { $0.name == endpoint.name }) else { return false }
                    state.slots[index] = .connected(connection)
                    return true
                }
                guard kept else {
                    await connection.close()
                    continue
                }
                connection.notifications.onGoingAway { [weak self] unsent in
                    self?.logger.debug("The server is leaving the connection", metadata: [LogField.endpoint: "\(endpoint.name)"])
                    self?.resend(unsent)
                }
                if endpoint.name != order.first?.name {
                    logger.notice("Connected to another instance", metadata: [LogField.endpoint: "\(endpoint.name)"])
                }
                return .success(connection)
            } catch {
                logger.debug("Connection attempt failed", metadata: [LogField.endpoint: "\(endpoint.name)", LogField.error: "\(error)"])
                lastError = error
            }
        }
        state.withLock { state in
            if case .connecting = state.slots[index] { state.slots[index] = .idle(preferred: order.first?.name) }
        }
        return .failure(lastError)
    }

    /// Sends notifications a leaving server did not run on the next connection, once one is up (within
    /// `reconnectFor`); a notification has nobody to tell when none is.
    private func resend(_ unsent: [[UInt8]]) {
        guard !unsent.isEmpty else { return }
        let until = ContinuousClock.now + reconnectFor
        Task {
            guard let connection = try? await connection(until: until) else { return }
            for payload in unsent { try? await connection.notify(payload: payload) }
        }
    }

    /// Replaces the endpoints (discovery saw instances come and go). Connections to endpoints no longer listed
    /// are closed; their slots reconnect to the others on their next call.
    func update(endpoints: [any RPCClientTransport]) {
        let names = Set(endpoints.map(\.name))
        let dropped = state.withLock { state -> [RPCConnection] in
            state.endpoints = endpoints
            var dropped: [RPCConnection] = []
            for index in state.slots.indices {
                switch state.slots[index] {
                case .connected(let connection) where !names.contains(connection.transport.name):
                    dropped.append(connection)
                    state.slots[index] = .idle(preferred: Self.name(at: index, in: endpoints))
                case .idle(let preferred) where preferred.map({ !names.contains($0) }) ?? true:
                    state.slots[index] = .idle(preferred: Self.name(at: index, in: endpoints))
                default:
                    break
                }
            }
            return dropped
        }
        for connection in dropped {
            logger.notice("Instance gone; its connection is closed", metadata: [LogField.endpoint: "\(connection.transport.name)"])
            connection.channel.close(promise: nil)
        }
    }

    /// Closes every connection; later calls fail with `.connectionClosed`.
    func close() async {
        let (connections, attempts) = state.withLock { state in
            state.closed = true
            var connections: [RPCConnection] = []
            var attempts: [Task<Result<RPCConnection, RPCClientError>, Never>] = []
            for slot in state.slots {
                switch slot {
                case .connected(let connection): connections.append(connection)
                case .connecting(let task): attempts.append(task)
                case .idle: break
                }
            }
            state.slots = state.slots.map { _ in .idle(preferred: nil) }
            return (connections, attempts)
        }
        for attempt in attempts {
            if case .success(let connection) = await attempt.value { await connection.close() }
        }
        for connection in connections { await connection.close() }
    }
}
