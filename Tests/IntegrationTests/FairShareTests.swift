import Foundation
import RPCJSON
import RPCProtocol
import RPCTestSupport
import XCTest

/// Issue 21, one test per attack class: a peer without administrator rights (TCP from loopback) cannot make
/// an administrator's `rpcd.ping` on the Unix socket fail (the user running the tests is made the
/// administrator, as root is by default), and once it disconnects nothing stays charged.
final class FairShareTests: XCTestCase {
    private let ping = #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#

    /// The [Server] line that makes the user running the tests the administrator.
    private let administrator = "Administrators=user:\(getuid())\n"

    /// Pings as the administrator on the Unix socket over a new connection; returns the latency.
    @discardableResult
    private func rootPing(_ daemon: DaemonProcess, file: StaticString = #filePath, line: UInt = #line) throws -> Duration {
        let started = ContinuousClock.now
        let connection = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try connection.call(ping)["result"], "pong", "root is served", file: file, line: line)
        return ContinuousClock.now - started
    }

    /// What rpcd holds for peers (`rpcd.info` → `frames.buffered_bytes`) comes back to 0 once they left.
    private func assertNothingStaysCharged(_ daemon: DaemonProcess, file: StaticString = #filePath, line: UInt = #line) throws {
        let observer = try RawConnection(.unix(path: daemon.socketPath))
        let info = #"{"jsonrpc":"2.0","method":"rpcd.info","id":1}"#
        // The daemon's closes of the peers' connections have no event a test sees: poll its count. The
        // observer's own call holds its frame while it runs.
        try blockingWaitUntil("nothing to stay charged after the peers disconnect", timeout: .seconds(30), file: file, line: line) {
            try observer.call(info)["result"]?["frames"]?["buffered_bytes"]?.intValue ?? Int.max <= info.utf8.count
        }
    }

    /// A connection that sends from a thread of its own: a peer that does not read makes the server stop
    /// reading it, and its send then waits until the server closes the connection.
    private final class Sender: @unchecked Sendable {
        let connection: RawConnection
        init(_ connection: RawConnection) { self.connection = connection }
    }

    private func sendInBackground(_ bytes: [UInt8], on connections: [RawConnection]) -> DispatchGroup {
        let group = DispatchGroup()
        for connection in connections {
            let sender = Sender(connection)
            DispatchQueue.global().async(group: group) { try? sender.connection.send(bytes) }
        }
        return group
    }

    /// 64 connections announcing 4 MiB frames and sending nothing more once locked every client out (256
    /// bytes): now they hold what they sent, and root and other TCP clients are served.
    func testAnnouncedLengthsLockNobodyOut() throws {
        let daemon = try DaemonProcess(DaemonOptions(config: administrator))
        let holders = try (0..<64).map { _ in try RawConnection(daemon.tcpEndpoint) }
        for holder in holders { try holder.send(WireFrame.header(announcing: 4 << 20)) }
        try rootPing(daemon)
        XCTAssertEqual(try RawConnection(daemon.tcpEndpoint).call(ping)["result"], "pong", "so are other TCP clients")
        _ = holders
    }

    /// A peer that pipelines calls with large ids and never reads its replies is closed when they fill its
    /// share, instead of pinning memory; root is served meanwhile, and nothing stays charged.
    func testRepliesAPeerDoesNotReadCannotPinMemory() throws {
        let daemon = try DaemonProcess(DaemonOptions(config: administrator + "FrameTimeout=3s\n", modules: ["echo"]))
        let before = daemon.residentKiB
        let id = String(repeating: "i", count: 500_000)
        var burst: [UInt8] = []
        for n in 0..<64 { burst += WireFrame.bytes(#"{"jsonrpc":"2.0","method":"echo.echo","params":[\#(n)],"id":"\#(id)\#(n)"}"#) }
        var readers = try (0..<4).map { _ in try RawConnection(daemon.tcpEndpoint, receiveBufferSize: 4096) }
        let sending = sendInBackground(burst, on: readers)
        try rootPing(daemon)
        XCTAssertEqual(sending.wait(timeout: .now() + 60), .success, "the server closes a peer that takes nothing")
        XCTAssertLessThan(daemon.residentKiB - before, 128 * 1024, "the peer's share, not 4 × 32 MB of replies")
        try rootPing(daemon)
        readers.removeAll()
        try assertNothingStaysCharged(daemon)
    }

    /// Batches of 1024 rpc.discover (read-only, allowed to every local peer) once kept rpcd busy for seconds:
    /// the refused reply stops the batch, and each connection waits its turn on the loop.
    func testBatchesOfDiscoverDoNotStarveRoot() throws {
        let daemon = try DaemonProcess(DaemonOptions(config: administrator + "MaxFrameSize=256K\n"))
        let entries = (0..<1024).map { #"{"jsonrpc":"2.0","method":"rpc.discover","id":\#($0)}"# }
        let batch = WireFrame.bytes("[" + entries.joined(separator: ",") + "]")
        let attackers = try (0..<4).map { _ in try RawConnection(daemon.tcpEndpoint, receiveTimeout: 60) }
        for attacker in attackers { try attacker.send(batch + batch) }
        var slowest = Duration.zero
        for _ in 0..<10 { slowest = max(slowest, try rootPing(daemon)) }
        for attacker in attackers {
            XCTAssertEqual(try attacker.receiveJSON()["error"]?["code"], -32008, "the reply is refused, as before")
        }
        XCTAssertLessThan(slowest, .seconds(2), "root waited \(slowest)")
        try assertNothingStaysCharged(daemon)
    }

    /// Subscribers that never read cannot make rpcd queue events without bound: events are charged by bytes.
    func testEventsASubscriberDoesNotReadAreBoundedByBytes() throws {
        let daemon = try DaemonProcess(DaemonOptions(config: administrator, modules: ["kv"]))
        let before = daemon.residentKiB
        var subscribers: [RawConnection] = []
        for _ in 0..<4 {
            let subscriber = try RawConnection(daemon.tcpEndpoint, receiveBufferSize: 4096)
            XCTAssertNotNil(try subscriber.call(#"{"jsonrpc":"2.0","method":"rpc.subscribe","params":["kv.changed"],"id":1}"#)["result"])
            subscribers.append(subscriber)
        }
        let admin = try RawConnection(.unix(path: daemon.socketPath))
        let value = String(repeating: "v", count: 500_000)
        for n in 0..<100 {
            XCTAssertNil(try admin.call(#"{"jsonrpc":"2.0","method":"kv.set","params":["k\#(n % 2)","\#(value)"],"id":\#(n)}"#)["error"])
        }
        try rootPing(daemon)
        XCTAssertLessThan(daemon.residentKiB - before, 160 * 1024, "a share, not 100 × 500 KB per subscriber")
        subscribers.removeAll()
        try assertNothingStaysCharged(daemon)
    }

    /// Connections are reserved for administrators (a 256th of MaxConnections=, at least one): TCP peers take
    /// their share (here 30 of 32), a user who is not an administrator the Unix socket's but the last, and only
    /// an administrator gets that one.
    func testTheLastConnectionIsTheAdministrators() throws {
        for administrator in [false, true] {
            let daemon = try DaemonProcess(DaemonOptions(config: "MaxConnections=32\nAdministrators=" + (administrator ? "user:\(getuid())" : "user:65534") + "\n"))
            let tcp = try (0..<30).map { _ in try RawConnection(daemon.tcpEndpoint) }
            for connection in tcp { XCTAssertEqual(try connection.call(ping)["result"], "pong") }
            let first = try RawConnection(.unix(path: daemon.socketPath))
            XCTAssertEqual(try first.call(ping)["result"], "pong", "the socket's share")
            let last = try RawConnection(.unix(path: daemon.socketPath), receiveTimeout: 5)
            if administrator {
                XCTAssertEqual(try last.call(ping)["result"], "pong", "the administrators' reserve")
            } else {
                XCTAssertTrue(last.isClosedByPeer(), "the reserve is not for this user")
            }
            _ = (tcp, first, last)
        }
    }
}
