import Foundation
import RPCClient
import RPCJSON
import RPCProtocol
import RPCTestSupport
import Synchronization
import XCTest

/// A caller that gives up reaches the handler in the real daemon: a Swift module's method (echo.sleep, whose
/// `Task.sleep` ends when its task is cancelled) stops early and gives its `MaxConcurrency=` slot back at once.
final class CancellationTests: XCTestCase {
    private var handlers: HandlersDirectory!

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
        // One call at a time: a second sleep is admitted only once the first one's slot is free.
        try handlers.write("echo", "[Handler]\nModule=echo\nMaxConcurrency=1\n")
    }

    override func tearDown() {
        handlers = nil
    }

    /// The call's timeout passes: the client fails it and sends rpc.cancel; the daemon counts the cancellation,
    /// frees the slot at once (the next call is not refused -32004), and the module's early answer is dropped.
    func testATimeoutCancelsTheCallInTheDaemon() async throws {
        let daemon = try DaemonProcess(DaemonOptions(handlers: handlers))
        // Over the socket: the access rules let this user change the log level there.
        let client = try await RPCClient.connect(to: .unix(path: daemon.socketPath))
        _ = try await client.call("rpcd.setLogLevel", params: ["debug"])
        let started = ContinuousClock.now
        do {
            _ = try await client.call("echo.sleep", params: [60_000], timeout: .milliseconds(200))
            XCTFail("the call should time out")
        } catch {
            XCTAssertEqual(error, .timedOut)
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
        // The same connection: rpc.cancel was handled before this call.
        let next = try await client.call("echo.sleep", params: [1])
        XCTAssertEqual(next, "done")
        let info = try await client.call("rpcd.info")
        XCTAssertEqual(info["calls"]?["cancelled"], JSONValue.number(1))
        try daemon.waitForLog(matching: "Answer to a cancelled call dropped")
        await client.close()
    }

    /// The calling task is cancelled: the call fails with `.cancelled` at once and the daemon cancels it too.
    func testTaskCancellationCancelsTheCallInTheDaemon() async throws {
        let daemon = try DaemonProcess(DaemonOptions(handlers: handlers))
        let client = try await RPCClient.connect(to: try XCTUnwrap(daemon.tcpEndpoint))
        // Once the daemon runs the sleep, the only slot is taken: wait for that, then cancel. (A probe that
        // takes the slot first makes the sleep itself fail -32004: then start it again.)
        let sleep: @Sendable () async throws -> JSONValue = { try await client.call("echo.sleep", params: [60_000]) }
        var sleeper = BackgroundCall(sleep)
        try await waitUntil("the first sleep to hold the slot") {
            if await isBusy(client) { return true }
            if sleeper.isDone { sleeper = BackgroundCall(sleep) }
            return false
        }
        sleeper.task.cancel()
        let outcome = await sleeper.task.result
        XCTAssertEqual(outcome.failureValue as? RPCClientError, .cancelled)
        let next = try await client.call("echo.sleep", params: [1])
        XCTAssertEqual(next, "done")
        let info = try await client.call("rpcd.info")
        XCTAssertEqual(info["calls"]?["cancelled"], JSONValue.number(1))
        await client.close()
    }

    /// `Timeout=` on an isolated handler: the caller gets -32003 and the module is told, and stops; the call
    /// keeps the only slot until the module is done with it, then gives it back. The host tells rpcd that the
    /// module is done although it drops the module's answer (it once dropped it without a word, and the slot
    /// stayed taken until the host ended).
    func testATimedOutCallGivesItsSlotBackOnceTheModuleStops() async throws {
        try handlers.write("echo", "[Handler]\nModule=echo\nMaxConcurrency=1\nTimeout=200ms\n")
        let daemon = try DaemonProcess(DaemonOptions(handlers: handlers))
        let client = try await RPCClient.connect(to: try XCTUnwrap(daemon.tcpEndpoint))
        do {
            _ = try await client.call("echo.sleep", params: [60_000])
            XCTFail("the call should time out")
        } catch {
            guard case .remote(let remote) = error else { return XCTFail("not answered by the daemon: \(error)") }
            XCTAssertEqual(remote.code, RPCError.Code.timeout)
        }
        try await waitUntil("the slot to be free again") { !(await isBusy(client)) }
        await client.close()
    }

    /// rpcctl call --timeout gives up after that long and the daemon hears of it.
    func testRpcctlTimeoutCancelsTheCall() async throws {
        let daemon = try DaemonProcess(DaemonOptions(handlers: handlers))
        let address = try XCTUnwrap(daemon.tcpEndpoint).description
        let result = try DaemonProcess.runTool(
            "rpcctl", ["call", "--address", address, "--timeout", "0.2", "echo.sleep", "60000"])
        XCTAssertEqual(result.status, 75, result.stderr)
        let client = try await RPCClient.connect(to: try XCTUnwrap(daemon.tcpEndpoint))
        // rpcctl closed its connection right after sending rpc.cancel; either ends the call in the daemon.
        try await waitUntil("the daemon to count the cancellation") {
            try await client.call("rpcd.info")["calls"]?["cancelled"] == 1
        }
        let next = try await client.call("echo.sleep", params: [1])
        XCTAssertEqual(next, "done")
        await client.close()
    }
}

/// Whether a quick echo.sleep is refused -32004 (the only slot is taken).
private func isBusy(_ client: RPCClient) async -> Bool {
    do {
        _ = try await client.call("echo.sleep", params: [0])
        return false
    } catch {
        guard case .remote(let remote) = error else { return false }
        return remote.code == RPCError.Code.serviceBusy
    }
}

/// A call started in a task of its own, with a flag the test can read without waiting.
private final class BackgroundCall: Sendable {
    private let finished = Atomic<Bool>(false)
    private let started = Mutex<Task<JSONValue, any Error>?>(nil)

    init(_ body: @escaping @Sendable () async throws -> JSONValue) {
        let task = Task { [self] in
            defer { finished.store(true, ordering: .releasing) }
            return try await body()
        }
        started.withLock { $0 = task }
    }

    var isDone: Bool { finished.load(ordering: .acquiring) }
    var task: Task<JSONValue, any Error> { started.withLock { $0! } }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
