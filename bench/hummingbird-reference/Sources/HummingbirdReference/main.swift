// hummingbird-reference PORT: a minimal Hummingbird 2 server on 127.0.0.1:PORT with one event loop, answering
// POST /rpc with rpcd.ping's reply (id 1), as application/json. The body of the request is read, as rpcd reads
// it, and not parsed: the reference is the HTTP stack and nothing else. Prints "listening on PORT" when ready.
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
let router = Router()
router.post("rpc") { request, _ -> Response in
    _ = try await request.body.collect(upTo: 1 << 20)
    return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: pong))
}
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
    // Written at once, not through stdout's buffer: the bench waits for this line on a pipe.
    onServerRunning: { _ in _ = "listening on \(port)\n".withCString { write(1, $0, strlen($0)) } },
    eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup(numberOfThreads: 1)))
try await app.runService()
