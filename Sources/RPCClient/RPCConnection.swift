import NIOCore
import RPCJSON
import RPCProtocol

/// One connection of an `RPCClient`: a channel whose `RPCClientHandler` matches replies to calls.
///
/// Calls may be made concurrently from any task: they are pipelined on the connection and their replies, which
/// may arrive in any order, are matched by id. The ids come from the client (unique across its connections).
/// Thread-safe; the channel's state lives on its event loop.
final class RPCConnection: Sendable {
    /// How this connection was made, and where it leads (`transport.name`).
    let transport: any RPCClientTransport
    let channel: any Channel
    /// The server's notifications on this connection (events), routed by `RPCClientHandler`.
    let notifications: RPCServerNotifications
    /// This connection's subscriptions, by id (`subscribe`): they live and end with the connection.
    let subscriptions = RPCClientSubscriptions()

    init(channel: any Channel, transport: any RPCClientTransport, notifications: RPCServerNotifications) {
        self.channel = channel
        self.transport = transport
        self.notifications = notifications
    }

    /// Opens a connection through `transport` on a loop of `eventLoopGroup`, with the client handler at the
    /// end of its pipeline.
    static func open(
        _ transport: any RPCClientTransport, eventLoopGroup: any EventLoopGroup, timeout: Duration
    ) async throws(RPCClientError) -> RPCConnection {
        let notifications = RPCServerNotifications()
        let channel = try await transport.connect(on: eventLoopGroup.next(), timeout: timeout) {
            [RPCClientHandler(notifications: notifications)]
        }
        return RPCConnection(channel: channel, transport: transport, notifications: notifications)
    }

    /// Whether the connection is still open.
    var isConnected: Bool { channel.isActive }

    /// Whether new calls may go here: open, and the server has not said it is leaving (`rpc.goingAway`).
    var isUsable: Bool { channel.isActive && !notifications.hasGoneAway }

    /// Takes no new calls from now on (the server answered -32006: it is stopping); what is in flight stays.
    func retire() {
        notifications.goneAway()
    }

    /// One call with id `id`; see `RPCClient.call`.
    func call(_ method: String, params: JSONValue?, id: Int, timeout: Duration?) async throws(RPCClientError) -> JSONValue {
        let payload = channel.allocator.buffer(bytes: RPCRequestEncoding.request(method: method, params: params, id: id))
        let promise = channel.eventLoop.makePromise(of: JSONValue.self)
        send(.call(id: id, payload: payload, promise: promise, timeout: timeout.map(TimeAmount.init)), failing: promise)
        return try await result(of: promise.futureResult, key: id)
    }

    /// A notification: sent, never answered. Returns once it is written to the connection; throws -32006
    /// (`RPCClientHandler.notRun`) when the server has left the connection, `.connectionClosed` when it closed.
    func notify(_ method: String, params: JSONValue?) async throws(RPCClientError) {
        try await notify(payload: RPCRequestEncoding.notification(method: method, params: params))
    }

    /// A notification already encoded (one sent again after another connection's `rpc.goingAway`).
    func notify(payload bytes: [UInt8]) async throws(RPCClientError) {
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(RPCClientCommand.notify(payload: channel.allocator.buffer(bytes: bytes)), promise: written)
        do {
            try await written.futureResult.get()
        } catch let error as RPCClientError {
            throw error
        } catch {
            throw .connectionClosed
        }
    }

    /// A batch whose calls have ids `ids`; see `RPCClient.batch`.
    func batch(
        _ calls: [(method: String, params: JSONValue?)], ids: [Int], timeout: Duration?
    ) async throws(RPCClientError) -> [Result<JSONValue, RPCClientError>] {
        let payload = channel.allocator.buffer(bytes: RPCRequestEncoding.batch(calls, ids: ids))
        let promise = channel.eventLoop.makePromise(of: [Result<JSONValue, RPCClientError>].self)
        send(.batch(ids: ids, payload: payload, promise: promise, timeout: timeout.map(TimeAmount.init)), failing: promise)
        return try await result(of: promise.futureResult, key: ids[0])
    }

    /// Sends one raw payload as a frame and waits for the next frame that is NOT a reply to a pending call
    /// (for protocol tests: invalid JSON, hostile input); nil if the server closes first, or at once when
    /// `expectReply` is false. Only meaningful while no other calls are pending. A reply that is not JSON
    /// throws `.protocolViolation`; none within `timeout` throws `.timedOut`; a connection that was already
    /// closed throws `.connectionClosed`. For rpcctl and rpcd's own tests only: not part of the library's API.
    ///
    /// - Parameter framed: false sends `payload` without a length prefix, so a test can write its own
    ///   (an oversized announced length, a frame split across writes, a truncated frame).
    func sendRaw(
        _ payload: [UInt8], expectReply: Bool = true, timeout: Duration = .seconds(10), framed: Bool = true
    ) async throws(RPCClientError) -> JSONValue? {
        let buffer = channel.allocator.buffer(bytes: payload)
        let promise = channel.eventLoop.makePromise(of: JSONValue?.self)
        send(
            .raw(payload: buffer, framed: framed, expectReply: expectReply, promise: promise, timeout: TimeAmount(timeout)),
            failing: promise)
        return try await Self.result(of: promise.futureResult)
    }

    /// Closes the connection; pending calls fail with `.connectionClosed`.
    func close() async {
        try? await channel.close()
    }

    // MARK: Internals

    /// Writes `command`; if the write fails (the channel closed before the frame went out whole, so the server
    /// cannot have run it), `promise` fails with -32006, `RPCClientHandler.notRun`, unless the handler failed it
    /// first with its own reason.
    func send<Value>(_ command: RPCClientCommand, failing promise: EventLoopPromise<Value>) {
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { _ in promise.fail(RPCClientHandler.notRun) }
        channel.writeAndFlush(command, promise: written)
    }

    /// Waits for the call or batch filed under `key`; if the task is cancelled meanwhile, the call fails with
    /// `.cancelled` at once and the server is told to cancel it.
    func result<Value: Sendable>(
        of future: EventLoopFuture<Value>, key: Int
    ) async throws(RPCClientError) -> Value {
        let outcome = await withTaskCancellationHandler {
            do throws(RPCClientError) {
                return Result<Value, RPCClientError>.success(try await Self.result(of: future))
            } catch {
                return .failure(error)
            }
        } onCancel: { [channel] in
            channel.writeAndFlush(RPCClientCommand.cancel(key: key, reason: .cancelled), promise: nil)
        }
        return try outcome.get()
    }

    static func result<Value: Sendable>(of future: EventLoopFuture<Value>) async throws(RPCClientError) -> Value {
        do {
            return try await future.get()
        } catch let error as RPCClientError {
            throw error
        } catch {
            throw .connectionClosed
        }
    }
}
