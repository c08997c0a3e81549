import JSONRPC
import NIOCore
import RPCClient
import RPCBinding
import RPCClientInProcess
import RPCCore
import RPCJSON
import RPCProtocol
import Synchronization
import XCTest

/// A Swift service that observes cancellation: `probe.wait [ms]` answers "done" after ms unless cancelled,
/// `probe.who` names the router it runs in.
final class CancellationProbe: RPCService, Sendable {
    let descriptor = RPCServiceDescriptor(
        name: "probe", version: "0.0.0", summary: "Test fixture: cancellation",
        methods: [
            RPCMethodDescriptor(name: "wait", params: [RPCParam("ms", schema: ["type": "integer"])], flags: .readOnly),
            RPCMethodDescriptor(name: "who", flags: .readOnly),
        ])
    let name: String
    let cancelled = Atomic<Int>(0)
    let running = Atomic<Int>(0)
    /// One element per call that started running, and per call that saw its cancellation.
    let started: AsyncStream<Void>
    let cancellations: AsyncStream<Void>
    private let startedSink: AsyncStream<Void>.Continuation
    private let cancellationSink: AsyncStream<Void>.Continuation

    init(name: String = "a") {
        self.name = name
        (started, startedSink) = AsyncStream.makeStream()
        (cancellations, cancellationSink) = AsyncStream.makeStream()
    }

    func handle(_ call: RPCCall, responder: RPCResponder) {
        guard call.method.name == "wait" else { return responder.succeed(.string(name)) }
        let ms = (try? call.paramsValue())?[0]?.intValue ?? 0
        running.add(1, ordering: .relaxed)
        let answer = call.eventLoop.scheduleTask(in: .milliseconds(Int64(ms))) { [self] in
            running.subtract(1, ordering: .relaxed)
            responder.succeed("done")
        }
        call.onCancel { [self] in
            answer.cancel()
            running.subtract(1, ordering: .relaxed)
            cancelled.add(1, ordering: .relaxed)
            cancellationSink.yield()
        }
        startedSink.yield()
    }
}

/// The client through `RPCInProcessTransport`: straight to a router, no socket, no port.
final class InProcessClientTests: XCTestCase {
    private func router(_ probe: CancellationProbe) throws -> RPCRouter {
        let statistics = RPCStatistics()
        return RPCRouter(
            registry: try RPCServiceRegistry(services: [probe, RPCDiscoverService()], metrics: statistics.metrics),
            parser: RPCEnvelopeParser(), statistics: statistics)
    }

    private func client(_ transports: [any RPCClientTransport], connections: Int = 1) -> RPCClient {
        RPCClient(configuration: .init(transports: transports, connections: connections))
    }

    func testCallsBatchesAndNotificationsReachTheRouter() async throws {
        let probe = CancellationProbe()
        let client = client([RPCInProcessTransport(router: try router(probe))])
        let value1 = try await client.call("probe.who")
        XCTAssertEqual(value1, "a")
        let value2 = try await client.call("probe.wait", params: [1])
        XCTAssertEqual(value2, "done")
        let results = try await client.batch([("probe.who", nil), ("no.such", nil)])
        XCTAssertEqual(try results[0].get(), "a")
        XCTAssertEqual(results[1].mapError { $0 }.failure?.remoteCode, RPCError.Code.methodNotFound)
        try await client.notify("probe.who")
        await client.close()
    }

    /// The call's timeout passes: the client fails it and the Swift handler is told at once.
    func testATimeoutReachesTheSwiftHandler() async throws {
        let probe = CancellationProbe()
        let router = try router(probe)
        let client = client([RPCInProcessTransport(router: router)])
        do {
            _ = try await client.call("probe.wait", params: [60_000], options: RPCCallOptions(timeout: .milliseconds(50)))
            XCTFail("expected a timeout")
        } catch {
            XCTAssertEqual(error, .timedOut)
        }
        var seen = probe.cancellations.makeAsyncIterator()
        _ = await seen.next()
        XCTAssertEqual(probe.cancelled.load(ordering: .relaxed), 1)
        XCTAssertEqual(probe.running.load(ordering: .relaxed), 0)
        XCTAssertEqual(router.statistics.snapshot().calls("-32011"), 1)
        await client.close()
    }

    /// The calling task is cancelled: the call ends with `.cancelled` and the handler sees it.
    func testTaskCancellationReachesTheSwiftHandler() async throws {
        let probe = CancellationProbe()
        let client = client([RPCInProcessTransport(router: try router(probe))])
        let call = Task { try await client.call("probe.wait", params: [60_000]) }
        var started = probe.started.makeAsyncIterator()
        _ = await started.next()
        call.cancel()
        let outcome = await call.result
        XCTAssertEqual(outcome.failure as? RPCClientError, .cancelled)
        var seen = probe.cancellations.makeAsyncIterator()
        _ = await seen.next()
        XCTAssertEqual(probe.cancelled.load(ordering: .relaxed), 1)
        await client.close()
    }

    /// Closing the client ends its connection: calls in flight fail with `.connectionClosed`, and the server
    /// cancels them.
    func testClosingCancelsCallsInFlight() async throws {
        let probe = CancellationProbe()
        let client = client([RPCInProcessTransport(router: try router(probe))])
        let call = Task { try await client.call("probe.wait", params: [60_000]) }
        var started = probe.started.makeAsyncIterator()
        _ = await started.next()
        await client.close()
        let outcome = await call.result
        XCTAssertEqual(outcome.failure as? RPCClientError, .connectionClosed)
        var seen = probe.cancellations.makeAsyncIterator()
        _ = await seen.next()
        XCTAssertEqual(probe.running.load(ordering: .relaxed), 0)
    }

    /// Two servers and two connections: calls alternate between them; when one's transport goes away,
    /// the client moves its connection to the other.
    func testSpreadsOverServersAndMovesOffOneThatGoes() async throws {
        let a = RPCInProcessTransport(router: try router(CancellationProbe(name: "a")), name: "a")
        let b = RPCInProcessTransport(router: try router(CancellationProbe(name: "b")), name: "b")
        let client = client([a, b], connections: 2)
        var seen: [String] = []
        for _ in 0..<4 { seen.append(try await client.call("probe.who").stringValue ?? "") }
        XCTAssertEqual(seen, ["a", "b", "a", "b"])
        client.update(transports: [b])
        for _ in 0..<4 {
            let value = try await client.call("probe.who")
            XCTAssertEqual(value, "b")
        }
        await client.close()
    }

    /// A server that cannot be reached is skipped for the next one in order (failover); once it is back, a
    /// broken connection reconnects to it first.
    func testFailsOverAndReconnects() async throws {
        let a = SwitchableTransport(RPCInProcessTransport(router: try router(CancellationProbe(name: "a")), name: "a"))
        let b = RPCInProcessTransport(router: try router(CancellationProbe(name: "b")), name: "b")
        let client = client([a, b])
        let value3 = try await client.call("probe.who")
        XCTAssertEqual(value3, "a")
        a.isUp.store(false, ordering: .relaxed)
        await a.closeConnections()
        let value4 = try await client.call("probe.who")
        XCTAssertEqual(value4, "b", "a is down: failover to b")
        await client.close()

        let again = self.client([a, b])
        do {
            _ = try await RPCClient(configuration: .init(transports: [a])).call("probe.who")
            XCTFail("a is down")
        } catch {
            guard case .connectFailed(let endpoint, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(endpoint, "a")
        }
        a.isUp.store(true, ordering: .relaxed)
        let value5 = try await again.call("probe.who")
        XCTAssertEqual(value5, "a")
        await again.close()
    }

    /// A new call waits for a connection up to its deadline while no server can be reached.
    func testACallWaitsForAConnectionUntilItsDeadline() async throws {
        let a = SwitchableTransport(RPCInProcessTransport(router: try router(CancellationProbe(name: "a")), name: "a"))
        a.isUp.store(false, ordering: .relaxed)
        let client = client([a])
        let waiting = Task { try await client.call("probe.who", options: RPCCallOptions(timeout: .seconds(10))) }
        var refused = a.refusals.makeAsyncIterator()
        for _ in 0..<3 { _ = await refused.next() }  // the call retried, and is still waiting
        a.isUp.store(true, ordering: .relaxed)
        let value6 = try await waiting.value
        XCTAssertEqual(value6, "a")
        let started = ContinuousClock.now
        a.isUp.store(false, ordering: .relaxed)
        await a.closeConnections()
        do {
            _ = try await client.call("probe.who", options: RPCCallOptions(timeout: .milliseconds(200)))
            XCTFail("nothing to connect to")
        } catch {
            guard case .connectFailed = error else { return XCTFail("\(error)") }
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
        await client.close()
    }
}

/// A transport that can be switched off: connecting fails while it is, and `closeConnections` ends the
/// connections made so far (a server that stopped). Wraps a real transport; nothing about it is faked.
final class SwitchableTransport: RPCClientTransport, Sendable {
    let inner: any RPCClientTransport
    let isUp = Atomic<Bool>(true)
    /// One element per connection attempt refused while switched off.
    let refusals: AsyncStream<Void>
    private let refusalSink: AsyncStream<Void>.Continuation
    private let channels = Mutex<[any Channel]>([])

    init(_ inner: any RPCClientTransport) {
        self.inner = inner
        (refusals, refusalSink) = AsyncStream.makeStream()
    }

    var name: String { inner.name }

    func connect(
        on loop: any EventLoop, timeout: Duration, clientHandlers: @escaping @Sendable () -> [any ChannelHandler]
    ) async throws(RPCClientError) -> any Channel {
        guard isUp.load(ordering: .relaxed) else {
            refusalSink.yield()
            throw .connectFailed(endpoint: name, reason: "switched off")
        }
        let channel = try await inner.connect(on: loop, timeout: timeout, clientHandlers: clientHandlers)
        channels.withLock { $0.append(channel) }
        return channel
    }

    func closeConnections() async {
        for channel in channels.withLock({ $0 }) { try? await channel.close() }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}

extension RPCClientError {
    var remoteCode: Int? {
        if case .remote(let error) = self { error.code } else { nil }
    }
}
