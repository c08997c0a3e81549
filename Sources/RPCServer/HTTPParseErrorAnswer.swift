import JSONRPC
import NIOCore
import NIOHTTP1
import RPCProtocol

/// Answers what NIO's HTTP decoder cannot parse — a head past its 80 KiB limit, HTTP/2's preface sent in clear
/// (`curl --http2-prior-knowledge`), anything that is not HTTP/1.x — with **400** and a JSON-RPC error object,
/// as every answer of rpcd's own carries one (docs/PROTOCOL.md §9). NIO's `HTTPServerProtocolErrorHandler`, which
/// it replaces, answers with an empty body.
///
///     HTTP/1.1 400 Bad Request
///     content-type: application/json
///     content-length: N
///     connection: close
///
///     {"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":{"detail":"..."}},"id":null}
///
/// A parse error is fatal: the decoder closes the connection right after it reports one, so the answer is
/// written at once, and only when no other response has begun (the same rule as NIO's). The error then goes on
/// to `ProtocolErrorHandler`, which logs it. Event-loop confined.
final class HTTPParseErrorAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// A response's head has been written and its end not yet.
    private var responding = false

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parseError = error as? HTTPParserError, !responding {
            let body = Self.body(for: parseError)
            let headers = HTTPHeaders([
                ("content-type", "application/json"), ("content-length", String(body.readableBytes)), ("connection", "close"),
            ])
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200: responding = true  // not an informational 1xx
        case .end: responding = false
        case .head, .body: break
        }
        context.write(data, promise: promise)
    }

    /// The error object: -32600 with what was wrong in `data.detail`.
    static func body(for error: HTTPParserError) -> ByteBuffer {
        let detail = error == .headerOverflow
            ? "the request head is longer than 80 KiB"
            : "not an HTTP/1.1 or HTTP/1.0 request (\(error)): this listener speaks HTTP/1.1, not HTTP/2 in clear (docs/PROTOCOL.md §9)"
        var body = ByteBuffer()
        RPCReplyWriter.writeError(.invalidRequest(detail), id: nil, into: &body)
        return body
    }
}
