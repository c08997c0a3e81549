import RPCClient
import RPCTestSupport
import RPCClientTools
import XCTest

/// The load generator end to end, against `LoopbackServer` over real TCP.
final class LoadGeneratorTests: XCTestCase {
    private var server: LoopbackServer!

    override func setUp() async throws {
        server = try await LoopbackServer.start()
    }

    override func tearDown() async throws {
        await server.stop()
    }

    func testLoadGeneratorAgainstLoopbackServer() async throws {
        let configuration = RPCLoadConfiguration(
            endpoint: server.endpoint, method: "t.ping", connections: 3, depth: 4, duration: .milliseconds(300),
            warmup: .milliseconds(100), threads: 2)
        let result = await RPCLoadGenerator.run(configuration, recorder: CollectingRecorder.self)
        XCTAssertEqual(result.connectionFailures, [])
        XCTAssertEqual(result.recorders.count, 3)
        XCTAssertGreaterThan(result.calls, 0)
        XCTAssertEqual(result.errors, 0)
        XCTAssertGreaterThan(result.warmupCalls, 0)
        XCTAssertEqual(result.recorders.map(\.samples.count).reduce(0, +), result.calls)
        XCTAssertEqual(result.unanswered, 0)

        let failing = await RPCLoadGenerator.run(
            RPCLoadConfiguration(
                endpoint: server.endpoint, method: "t.fail", connections: 1, depth: 1, duration: .milliseconds(100),
                warmup: .zero, threads: 1),
            recorder: CollectingRecorder.self)
        XCTAssertGreaterThan(failing.calls, 0)
        XCTAssertEqual(failing.errors, failing.calls)
        XCTAssertNotNil(failing.firstError)
    }

    func testLoadGeneratorCountsConnectionFailures() async {
        let result = await RPCLoadGenerator.run(
            RPCLoadConfiguration(
                endpoint: .tcp(host: "127.0.0.1", port: 1), method: "t.ping", connections: 2, duration: .milliseconds(10),
                warmup: .zero, threads: 1),
            recorder: CollectingRecorder.self)
        XCTAssertEqual(result.connectionFailures.count, 2)
        XCTAssertEqual(result.recorders.count, 0)
        XCTAssertEqual(result.calls, 0)
    }
}
