import NIOCore
import NIOEmbedded
import RPCTestSupport
import RPCJSON
import XCTest

@testable import RPCClient

/// The client error a completed future failed with (nil if it succeeded or is still pending).
func clientError<Value>(_ future: EventLoopFuture<Value>) -> RPCClientError? {
    guard case .failure(let error)? = outcome(future) else { return nil }
    return error as? RPCClientError
}

/// An `EmbeddedChannel` around one `RPCClientHandler` (no framing: frames are payload buffers).
struct HandlerHarness {
    let channel: EmbeddedChannel
    let handler: RPCClientHandler
    let notifications = RPCServerNotifications()

    init() throws {
        handler = RPCClientHandler(notifications: notifications)
        channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
    }

    var loop: EmbeddedEventLoop { channel.embeddedEventLoop }

    /// Sends a call as `RPCClient.call` does and returns its future.
    func call(
        _ method: String, params: JSONValue? = nil, id: Int, timeout: TimeAmount? = nil
    ) throws -> EventLoopFuture<JSONValue> {
        let promise = loop.makePromise(of: JSONValue.self)
        let payload = ByteBuffer(bytes: RPCRequestEncoding.request(method: method, params: params, id: id))
        try channel.writeOutbound(RPCClientCommand.call(id: id, payload: payload, promise: promise, timeout: timeout))
        return promise.futureResult
    }

    func batch(
        _ calls: [(method: String, params: JSONValue?)], ids: [Int], timeout: TimeAmount? = nil
    ) throws -> EventLoopFuture<[Result<JSONValue, RPCClientError>]> {
        let promise = loop.makePromise(of: [Result<JSONValue, RPCClientError>].self)
        let payload = ByteBuffer(bytes: RPCRequestEncoding.batch(calls, ids: ids))
        try channel.writeOutbound(RPCClientCommand.batch(ids: ids, payload: payload, promise: promise, timeout: timeout))
        return promise.futureResult
    }

    func raw(_ text: String, expectReply: Bool = true, timeout: TimeAmount? = .seconds(10)) throws -> EventLoopFuture<JSONValue?> {
        let promise = loop.makePromise(of: JSONValue?.self)
        try channel.writeOutbound(
            RPCClientCommand.raw(
                payload: ByteBuffer(string: text), framed: true, expectReply: expectReply, promise: promise,
                timeout: timeout))
        return promise.futureResult
    }

    /// The next payload the handler wrote, as text.
    func sent() throws -> String? {
        try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) }
    }

    /// Asks the handler to give up on the call filed under `key`, as `RPCClient` does when its task is cancelled.
    func cancel(key: Int, reason: RPCClientError = .cancelled) throws {
        try channel.writeOutbound(RPCClientCommand.cancel(key: key, reason: reason))
    }

    /// Delivers one reply frame.
    func reply(_ text: String) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }
}

extension HandlerHarness {
    /// Sends a notification as `RPCClient.notify` does.
    func notify(_ method: String) throws {
        try channel.writeOutbound(
            RPCClientCommand.notify(payload: ByteBuffer(bytes: RPCRequestEncoding.notification(method: method, params: nil))))
    }
}
