import NIOCore
import NIOPosix
import RPCJSON
package import RPCProtocol
import RPCClient
import Synchronization

/// A small JSON-RPC server on 127.0.0.1 for end-to-end client tests (NIOPosix comes with RPCClient).
///
/// Methods: `t.ping` → "pong"; `t.echo` → params; `t.fail` → error 7 with data; `t.sleep` [ms] → "slept"
/// after ms; `t.close` → closes the connection without answering; `t.bad` → a reply without result or
/// error; `t.incr` → a count of its calls over all connections (a call that changes state). A stopping
/// server's two ends, while `ends` (1 at first) counts down, then "ran": `t.cut` → `rpc.goingAway` accepting the
/// frames read before it, and its output closed, running nothing more; `t.closeOnce` → the close, not a word. Batches
/// answer each request (in reverse order); notifications get nothing; non-JSON gets -32700 with id null.
/// `received` tells which methods it has read, so that a test can wait until a call got there.
package final class LoopbackServer: Sendable {
    let channel: any Channel
    private let requests: ReceivedRequests
    package var endpoint: RPCEndpoint { .tcp(host: "127.0.0.1", port: channel.localAddress!.port!) }

    /// The methods of the requests read so far (batch entries included), in the order read.
    package var received: [String] { requests.methods.withLock { $0 } }
    /// How many `t.incr` ran.
    package var count: Int { requests.count.withLock { $0 } }
    /// How many more `t.cut` and `t.closeOnce` end their connection.
    package func allowEnds(_ ends: Int) { requests.ends.withLock { $0 = ends } }

    package static func start() async throws -> LoopbackServer {
        let requests = ReceivedRequests()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        RPCClient.framingHandlers(maxFrameSize: 1 << 20) + [ServerHandler(requests: requests)])
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return LoopbackServer(channel: channel, requests: requests)
    }

    private init(channel: any Channel, requests: ReceivedRequests) {
        self.channel = channel
        self.requests = requests
    }

    final class ReceivedRequests: Sendable {
        let methods = Mutex<[String]>([])
        let count = Mutex(0)
        let ends = Mutex(1)

        /// Whether one of the ends allowed is used up now.
        func takeEnd() -> Bool {
            ends.withLock { ends in
                defer { ends = max(0, ends - 1) }
                return ends > 0
            }
        }
    }

    package func stop() async {
        try? await channel.close()
    }

    final class ServerHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let requests: ReceivedRequests
        /// Frames read on this connection; after a cut, none is read any more.
        private var frames = 0
        private var cut = false

        init(requests: ReceivedRequests) {
            self.requests = requests
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !cut else { return }
            frames += 1
            let frame = unwrapInboundIn(data)
            guard let message = try? JSONValue(parsing: Array(frame.readableBytesView)) else {
                send(#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#, context)
                return
            }
            let entries = message.arrayValue ?? [message]
            requests.methods.withLock { $0 += entries.compactMap { $0["method"]?.stringValue } }
            if case .array(let requests) = message {
                let replies = requests.reversed().compactMap { immediateReply(to: $0) }
                if !replies.isEmpty { send(JSONValue.array(replies).jsonText, context) }
                return
            }
            if message["method"] == "t.close" {
                context.close(promise: nil)
                return
            }
            if let method = message["method"]?.stringValue, ["t.cut", "t.closeOnce"].contains(method), requests.takeEnd() {
                cut = true
                if method == "t.cut" {
                    // As rpcd: its output first, reading on (and dropping) what comes, so that the close cannot
                    // reset the connection and discard rpc.goingAway on its way (a close with unread input
                    // does); the client closes once it has read it.
                    send(#"{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":null,"accepted":\#(frames - 1)}}"#, context)
                    context.close(mode: .output, promise: nil)
                } else {
                    context.close(promise: nil)
                }
                return
            }
            if message["method"] == "t.sleep", let id = message["id"] {
                let milliseconds = Int64(message["params"]?[0]?.intValue ?? 0)
                let loop = context.eventLoop.assumeIsolated()
                loop.scheduleTask(in: .milliseconds(milliseconds)) {
                    let reply: JSONValue = ["jsonrpc": "2.0", "result": "slept", "id": id]
                    self.send(reply.jsonText, context)
                }
                return
            }
            if let reply = immediateReply(to: message) { send(reply.jsonText, context) }
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) {
            // Like rpcd: an oversized frame is answered with -32000 and the connection is closed.
            let reply = #"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Frame too large"},"id":null}"#
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: reply))).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }

        private func immediateReply(to request: JSONValue) -> JSONValue? {
            guard let id = request["id"] else { return nil }
            switch request["method"]?.stringValue {
            case "t.ping": return ["jsonrpc": "2.0", "result": "pong", "id": id]
            case "t.echo": return ["jsonrpc": "2.0", "result": request["params"] ?? .null, "id": id]
            case "t.fail":
                return ["jsonrpc": "2.0", "error": ["code": 7, "message": "Failed", "data": ["why": "asked"]], "id": id]
            case "t.bad": return ["jsonrpc": "2.0", "id": id]
            case "t.cut", "t.closeOnce": return ["jsonrpc": "2.0", "result": "ran", "id": id]
            case "t.incr":
                let count = requests.count.withLock { count in
                    count += 1
                    return count
                }
                return ["jsonrpc": "2.0", "result": .number(count), "id": id]
            default: return ["jsonrpc": "2.0", "error": ["code": -32601, "message": "Method not found"], "id": id]
            }
        }

        private func send(_ text: String, _ context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)), promise: nil)
        }
    }
}
