// rpcd-echo-reference: the "raw SwiftNIO" baseline for `rpcctl bench`.
//
// Speaks rpcd's framing (4-byte big-endian length + payload) and writes every frame straight back, flushing
// once per read burst. No JSON is parsed, so benchmarking it measures what sockets, framing and NIO cost; an
// echoed request carries its own "id", so `rpcctl bench` matches the echoes like replies. See bench/README.md.
//
//     rpcd-echo-reference --listen 127.0.0.1:7391 [--threads N]
import NIOCore
import NIOExtras
import NIOPosix
import RPCProtocol
import RPCWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes each frame payload back; `LengthFieldPrepender` puts the length in front again.
final class FrameEchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var needsFlush = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
        needsFlush = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

let usage = "usage: rpcd-echo-reference --listen HOST:PORT|/path/to.sock [--threads N] [--max-frame-size BYTES]"

/// Writes one line to a file descriptor unbuffered (the "listening" line must reach a pipe at once).
func writeLine(_ line: String, to descriptor: Int32) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(descriptor, bytes.baseAddress, bytes.count) }
}

func fail(_ message: String) -> Never {
    writeLine("rpcd-echo-reference: \(message)", to: 2)
    writeLine(usage, to: 2)
    exit(64)
}

var listen: RPCEndpoint?
var threads = System.coreCount
var maxFrameSize = 16 << 20
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--listen":
        guard let text = arguments.popFirst() else { fail("--listen needs an address") }
        do { listen = try RPCEndpoint(parsing: text) } catch { fail("--listen: \(error)") }
    case "--threads":
        guard let text = arguments.popFirst(), let value = Int(text), value > 0 else { fail("--threads needs a positive number") }
        threads = value
    case "--max-frame-size":
        guard let text = arguments.popFirst(), let value = Int(text), value >= 0, value <= Int(UInt32.max) else {
            fail("--max-frame-size needs a number of bytes")
        }
        maxFrameSize = value
    case "-h", "--help":
        writeLine(usage, to: 1)
        writeLine("Echoes every length-prefixed frame back: the raw SwiftNIO baseline for `rpcctl bench`.", to: 1)
        exit(0)
    default:
        fail("unknown argument '\(argument)'")
    }
}
guard let listen else { fail("--listen is required") }

let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
let frameLimit = maxFrameSize
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.maxMessagesPerRead, value: 16)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandlers([
                ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: frameLimit)),
                LengthFieldPrepender(lengthFieldBitLength: .thirtyTwoBits, lengthFieldEndianness: .big),
                FrameEchoHandler(),
            ])
        }
    }

let server: any Channel
do {
    switch listen {
    case .tcp(let host, let port):
        server = try await bootstrap.childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port).get()
    case .unix(let path):
        server = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
    case .tls, .http, .https, .httpUnix:
        writeLine("rpcd-echo-reference: only plain TCP and Unix sockets are part of the reference", to: 2)
        exit(64)
    }
} catch {
    writeLine("rpcd-echo-reference: cannot listen on \(listen): \(error)", to: 2)
    exit(71)
}

let bound: String
switch (listen, server.localAddress) {
case (.tcp(let host, _), let address?):
    bound = RPCEndpoint.tcp(host: address.ipAddress ?? host, port: address.port ?? 0).description
default:
    bound = listen.description
}
writeLine("listening on \(bound)", to: 1)
try await server.closeFuture.get()
