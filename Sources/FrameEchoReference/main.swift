// rpcd-echo-reference: the "raw SwiftNIO" baseline for `make bench` and `rpcctl bench`.
//
// Speaks rpcd's framing (4-byte big-endian length + payload) and writes every frame straight back: the
// fastest frame echo we know how to write on NIO, so that rpcd's ratios against it are honest. No JSON is
// parsed, so benchmarking it measures what sockets, framing and NIO cost; an echoed request carries its own
// "id", so the load clients match the echoes like replies. See bench/README.md.
//
//     rpcd-echo-reference --listen 127.0.0.1:7391 [--threads N] [--per-frame]
import NIOCore
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

/// Echoes whole frames: of each read, the run of whole frames at its start goes back as one write of a slice
/// of the receive buffer (no copy, no buffer per frame, no pipeline hop per frame), and one flush per read
/// burst sends them all. A frame split across reads is gathered in a buffer of its own. A length above the
/// maximum closes the connection, as rpcd refuses it.
///
/// With `perFrame`, every frame is written on its own (a slice each, length included): the reference the
/// issue measured first, "one write per frame", kept to show what coalescing buys.
final class FrameEchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let maxFrameSize: Int
    private let perFrame: Bool
    /// The start of a frame that has not arrived whole.
    private var partial: ByteBuffer?
    private var needsFlush = false

    init(maxFrameSize: Int, perFrame: Bool) {
        self.maxFrameSize = maxFrameSize
        self.perFrame = perFrame
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var input = unwrapInboundIn(data)
        if var buffered = partial {
            partial = nil
            buffered.writeBuffer(&input)
            input = buffered
        }
        // The length of the run of whole frames at the start of `input`.
        var whole = 0
        while true {
            let start = input.readerIndex + whole
            guard let length = input.getInteger(at: start, endianness: .big, as: UInt32.self) else { break }
            guard Int(length) <= maxFrameSize else {
                context.close(promise: nil)
                return
            }
            let size = LengthPrefixedFrameDecoder.headerSize + Int(length)
            guard input.readableBytes - whole >= size else { break }
            if perFrame {
                context.write(wrapOutboundOut(input.getSlice(at: start, length: size)!), promise: nil)
            }
            whole += size
        }
        if whole > 0 {
            let frames = input.readSlice(length: whole)!
            if !perFrame { context.write(wrapOutboundOut(frames), promise: nil) }
            needsFlush = true
        }
        if input.readableBytes > 0 {
            var own = context.channel.allocator.buffer(capacity: input.readableBytes)
            own.writeBuffer(&input)
            partial = own
        }
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

let usage = "usage: rpcd-echo-reference --listen HOST:PORT|/path/to.sock [--threads N] [--max-frame-size BYTES] [--per-frame]"

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
var perFrame = false
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
    case "--per-frame":
        perFrame = true
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
let writesPerFrame = perFrame
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.maxMessagesPerRead, value: 16)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(FrameEchoHandler(maxFrameSize: frameLimit, perFrame: writesPerFrame))
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
