import Foundation
import RPCClient
import RPCJSON
import RPCProtocol
import RPCTestSupport
import XCTest

/// `RPCClient` against real daemons that stop and start: it reconnects to a restarted daemon, and fails over
/// to another daemon serving the same services when one stops.
final class ClientResilienceTests: XCTestCase {
    /// The daemon restarts on the same socket: the client's next call reconnects by itself.
    func testReconnectsAfterTheDaemonRestarts() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-reconnect-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let shared = directory.appendingPathComponent("shared.sock").path
        var daemon: DaemonProcess? = try DaemonProcess(DaemonOptions(config: "Listen=\(shared)\n"))
        let client = try await RPCClient.connect(to: .unix(path: shared))
        let firstInfo = try await client.call("rpcd.info")
        daemon?.terminate()
        daemon = nil
        try await waitUntil("the connection to break with the daemon") { !client.isConnected }
        daemon = try DaemonProcess(DaemonOptions(config: "Listen=\(shared)\n"))
        let secondInfo = try await client.call("rpcd.info", options: RPCCallOptions(timeout: .seconds(10)))
        XCTAssertNotEqual(firstInfo["pid"], secondInfo["pid"], "the call reached the new daemon")
        XCTAssertTrue(client.isConnected)
        await client.close()
        _ = daemon
    }

    /// Two daemons; the one the client uses stops; calls go on at the other, without an error.
    func testFailsOverWhenADaemonStops() async throws {
        let first = try DaemonProcess()
        let second = try DaemonProcess()
        let client = RPCClient(configuration: .init(endpoints: [first.tcpEndpoint, second.tcpEndpoint]))
        let options = RPCCallOptions(timeout: .seconds(10))
        let firstPID = JSONValue.number(Int(first.process.processIdentifier))
        let secondPID = JSONValue.number(Int(second.process.processIdentifier))
        let before = try await client.call("rpcd.info", options: options)["pid"]
        XCTAssertEqual(before, firstPID)
        first.terminate()
        try await waitUntil("the connection to break with the first daemon") { !client.isConnected }
        for _ in 0..<20 {
            let pid = try await client.call("rpcd.info", options: options)["pid"]
            XCTAssertEqual(pid, secondPID)
        }
        await client.close()
    }

    /// Two connections, two daemons: calls are spread over both (round-robin over the pool).
    func testSpreadsCallsOverTwoDaemons() async throws {
        let first = try DaemonProcess()
        let second = try DaemonProcess()
        let client = RPCClient(configuration: .init(endpoints: [first.tcpEndpoint, second.tcpEndpoint], connections: 2))
        let firstPID = JSONValue.number(Int(first.process.processIdentifier))
        let secondPID = JSONValue.number(Int(second.process.processIdentifier))
        var seen: [JSONValue] = []
        for _ in 0..<10 {
            let info = try await client.call("rpcd.info")
            seen.append(info["pid"] ?? .null)
        }
        XCTAssertEqual(seen.filter { $0 == firstPID }.count, 5)
        XCTAssertEqual(seen.filter { $0 == secondPID }.count, 5)
        await client.close()
    }
}
