import Foundation
import JSONRPC
import Logging
import NIOCore
import NIOPosix
import RPCCore
import RPCProtocol
@testable import RPCServer
import RPCWire
import ServiceLifecycle
import Synchronization
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `RPCServer` serving descriptors that are already bound and listening, as systemd passes them.
final class BoundSocketTests: XCTestCase {
    private func listeningSocket() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        XCTAssertTrue(bound)
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A blocking socket connected to 127.0.0.1:`port`, or nil when nothing listens there; the caller closes it.
    private static func connected(port: Int) -> Int32? {
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(client)
            return nil
        }
        return client
    }

    private static func connects(port: Int) -> Bool {
        guard let client = connected(port: port) else { return false }
        close(client)
        return true
    }

    /// One call over a blocking socket: the frame out, the frame back.
    private static func ping(port: Int) throws -> String {
        let client = try XCTUnwrap(connected(port: port), "nothing listens on \(port)")
        defer { close(client) }
        let payload = Array(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#.utf8)
        let frame = withUnsafeBytes(of: UInt32(payload.count).bigEndian, Array.init) + payload
        XCTAssertEqual(send(client, frame, frame.count, 0), frame.count)
        var reply = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 256)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while reply.count < 4 || reply.count < 4 + Int(UInt32(reply[0]) << 24 | UInt32(reply[1]) << 16 | UInt32(reply[2]) << 8 | UInt32(reply[3])) {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            reply += buffer.prefix(count)
        }
        return String(decoding: reply.dropFirst(4), as: UTF8.self)
    }

    func testServesAListeningDescriptorAndReportsItsAddress() async throws {
        let (descriptor, port) = try listeningSocket()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = RPCServerState()
        let statistics = RPCStatistics()
        let listening = AsyncStream<[RPCEndpoint]>.makeStream()
        let server = RPCServer(
            configuration: RPCServer.Configuration(listen: [], boundSockets: [descriptor]),
            router: RPCRouter(
                registry: try RPCServiceRegistry(services: [DaemonService(state: state, statistics: statistics)]),
                parser: RPCEnvelopeParser(), statistics: statistics),
            state: state, group: group, logger: Logger(label: "test")
        ) { endpoints in
            listening.continuation.yield(endpoints)
        }
        let services = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: server)], logger: Logger(label: "test")))
        let running = Task { try await services.run() }

        var iterator = listening.stream.makeAsyncIterator()
        let endpoints = await iterator.next()
        XCTAssertEqual(endpoints, [.tcp(host: "127.0.0.1", port: port)])
        XCTAssertEqual(state.listeners, [.tcp(host: "127.0.0.1", port: port)])
        // Blocking I/O in the test task is fine: the server runs on its own event loop thread.
        let reply = try Self.ping(port: port)
        XCTAssertEqual(reply, #"{"jsonrpc":"2.0","result":"pong","id":1}"#)

        await services.triggerGracefulShutdown()
        try await running.value
        try await group.shutdownGracefully()
    }

    /// A restart's kept sockets (systemd's file descriptor store): the one bound to a `Listen=` address serves it,
    /// with that entry's scheme; one no entry names is closed; both are reported, with what was bound anew.
    func testKeptSocketsServeTheirListenEntryAndTheOthersAreClosed() async throws {
        let (kept, port) = try listeningSocket()
        let (unused, unusedPort) = try listeningSocket()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = RPCServerState()
        let statistics = RPCStatistics()
        let reported = Mutex<(serving: [RPCEndpoint: Int32], unused: [Int32])?>(nil)
        var configuration = RPCServer.Configuration(listen: [.tcp(host: "127.0.0.1", port: port), .tcp(host: "127.0.0.1", port: 0)])
        configuration.keptSockets = [kept, unused]
        // Told twice: the unused ones before anything is bound, then what serves.
        configuration.keepSockets = { serving, unused in
            reported.withLock { report in
                report = (
                    (report?.serving ?? [:]).merging(serving.map { ($0.endpoint, $0.descriptor) }) { $1 },
                    (report?.unused ?? []) + unused)
            }
        }
        let server = RPCServer(
            configuration: configuration,
            router: RPCRouter(
                registry: try RPCServiceRegistry(services: [DaemonService(state: state, statistics: statistics)]),
                parser: RPCEnvelopeParser(), statistics: statistics),
            state: state, group: group, logger: Logger(label: "test"))
        let endpoints = try await server.start()
        XCTAssertEqual(endpoints.count, 2)
        let report = try XCTUnwrap(reported.withLock { $0 })
        XCTAssertEqual(report.serving[.tcp(host: "127.0.0.1", port: port)], kept, "served through the kept socket")
        XCTAssertEqual(report.serving.count, 2, "the port-0 entry was bound anew, and is reported to be kept too")
        XCTAssertEqual(report.unused, [unused])
        XCTAssertFalse(Self.connects(port: unusedPort), "closed: its port listens no more")
        XCTAssertEqual(try Self.ping(port: port), #"{"jsonrpc":"2.0","result":"pong","id":1}"#)
        server.initiateShutdown()
        try await group.shutdownGracefully()
    }

    /// A kept Unix socket whose file was removed meanwhile serves nobody: it is dropped and the path bound anew.
    func testAKeptUnixSocketWhoseFileIsGoneIsReplaced() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-kept-\(getpid()).sock").path
        let kept = try RPCServer.listeningSocket(at: try SocketAddress(unixDomainSocketPath: path))
        XCTAssertEqual(unlink(path), 0)
        defer { unlink(path) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let statistics = RPCStatistics()
        let reported = Mutex<(serving: [Int32], unused: [Int32])?>(nil)
        var configuration = RPCServer.Configuration(listen: [.unix(path: path)])
        configuration.keptSockets = [kept]
        configuration.keepSockets = { serving, unused in
            reported.withLock { $0 = (($0?.serving ?? []) + serving.map(\.descriptor), ($0?.unused ?? []) + unused) }
        }
        let server = RPCServer(
            configuration: configuration,
            router: RPCRouter(registry: try RPCServiceRegistry(services: []), parser: RPCEnvelopeParser(), statistics: statistics),
            state: RPCServerState(), group: group, logger: Logger(label: "test"))
        try await server.start()
        let report = try XCTUnwrap(reported.withLock { $0 })
        XCTAssertEqual(report.unused, [kept])
        XCTAssertEqual(report.serving.count, 1)
        XCTAssertTrue(RPCServer.isReachable(.unix(path: path)), "bound anew")
        server.initiateShutdown()
        try await group.shutdownGracefully()
    }

    func testADescriptorThatIsNotASocketIsRefusedByNumber() async throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let statistics = RPCStatistics()
        let server = RPCServer(
            configuration: RPCServer.Configuration(listen: [], boundSockets: [fds[0]]),
            router: RPCRouter(registry: try RPCServiceRegistry(services: []), parser: RPCEnvelopeParser(), statistics: statistics),
            state: RPCServerState(), group: group, logger: Logger(label: "test"))
        do {
            try await server.start()
            XCTFail("a pipe was served")
        } catch let error as RPCServerError {
            XCTAssertTrue(error.description.contains("fd:\(fds[0])"), error.description)
            XCTAssertEqual(error.errno, ENOTSOCK)
        }
        try await group.shutdownGracefully()
    }
}
