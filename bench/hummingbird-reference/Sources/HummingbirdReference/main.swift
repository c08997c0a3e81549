// hummingbird-reference PORT: a minimal Hummingbird 2 server on 127.0.0.1:PORT with one event loop, answering
// every request with rpcd.ping's reply (id 1), as application/json. The leanest Hummingbird handler there is,
// so that the bench's ratio does not flatter rpcd: a `CallbackResponder` (no router, no middleware, no path
// match), a response body made once, no server name header, and the request body not read (Hummingbird drains
// it after the response), while rpcd reads, parses and routes every call. Prints "listening on PORT" when ready.
#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import NIOPosix

guard CommandLine.arguments.count == 2, let port = Int(CommandLine.arguments[1]) else {
    _ = "usage: hummingbird-reference PORT\n".withCString { write(2, $0, strlen($0)) }
    exit(64)
}
let pong = ByteBuffer(string: #"{"jsonrpc":"2.0","result":"pong","id":1}"#)
let responder = CallbackResponder { (_: Request, _: BasicRequestContext) -> Response in
    Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: pong))
}
let app = Application(
    responder: responder,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
    // Written at once, not through stdout's buffer: the bench waits for this line on a pipe.
    onServerRunning: { _ in _ = "listening on \(port)\n".withCString { write(1, $0, strlen($0)) } },
    eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup(numberOfThreads: 1)))
try await app.runService()
