import Foundation
import RPCClient
import RPCJSON
import RPCProtocol
import RPCTestSupport
import Synchronization
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

    /// The daemon the client uses stops (SIGTERM, as `systemctl restart` does) under 8 tasks calling kv.set and
    /// calc.add: it names the calls it accepted (`rpc.goingAway`) and answers them, and the client sends the
    /// others to the second daemon. Not one call fails, kv.set (not idempotent) included.
    func testNoCallFailsWhenADaemonStopsUnderPipelinedCalls() async throws {
        let first = try DaemonProcess(DaemonOptions(modules: ["kv", "calc"]))
        let second = try DaemonProcess(DaemonOptions(modules: ["kv", "calc"]))
        let client = RPCClient(configuration: .init(endpoints: [.unix(path: first.socketPath), .unix(path: second.socketPath)]))
        let flow = Flow()
        let callers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        var index = 0
                        while !flow.stopped.load(ordering: .relaxed) || index < 20 {
                            index += 1
                            if index % 2 == 1 {
                                _ = try await client.call("kv.set", params: [.string("restart-\(task)"), .number(index)])
                            } else {
                                let sum = try await client.call("calc.add", params: [.number(index), 1])
                                XCTAssertEqual(sum.doubleValue, Double(index + 1))
                            }
                            flow.calls.add(1, ordering: .relaxed)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await waitUntil("calls to flow") { flow.calls.load(ordering: .relaxed) > 200 }
        let status = await Task.detached { first.terminate() }.value
        XCTAssertEqual(status, 0)
        let before = flow.calls.load(ordering: .relaxed)
        try await waitUntil("calls to flow at the second daemon") { flow.calls.load(ordering: .relaxed) > before + 200 }
        flow.stopped.store(true, ordering: .relaxed)
        try await callers.value  // a failed call fails the test here
        let pid = try await client.call("rpcd.info")["pid"]
        XCTAssertEqual(pid, .number(Int(second.process.processIdentifier)))
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

/// Calls made so far, and whether to stop making them.
private final class Flow: Sendable {
    let stopped = Atomic<Bool>(false)
    let calls = Atomic<Int>(0)
}
