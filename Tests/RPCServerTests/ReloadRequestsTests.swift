import RPCProtocol
@testable import RPCServer
import XCTest

/// Reloads asked for by SIGHUP and `rpcd.reload` run one at a time, in the order asked, and each asker gets
/// its own reload's outcome.
final class ReloadRequestsTests: XCTestCase {
    func testNothingServesReloadsBeforeServeAndAfterStop() async {
        let requests = ReloadRequests()
        guard case .failed = await requests.reload() else { return XCTFail("a reload before serve() fails") }
        await requests.serve { .reloaded(services: ["calc"]) }
        let served = await requests.reload()
        XCTAssertEqual(served, .reloaded(services: ["calc"]))
        await requests.stop()
        guard case .failed = await requests.reload() else { return XCTFail("a reload after stop() fails") }
    }

    func testReloadsRunOneAtATimeInTheOrderAsked() async {
        let requests = ReloadRequests()
        let log = ReloadLog()
        await requests.serve {
            let number = log.begin()
            // Yield a few times: an overlapping reload would begin before this one ends.
            for _ in 0..<20 { await Task.yield() }
            log.end(number)
            return number % 2 == 0 ? .reloaded(services: ["\(number)"]) : .failed("reload \(number)")
        }
        let outcomes = await withTaskGroup(of: ReloadRequests.Outcome.self) { group in
            for _ in 0..<8 { group.addTask { await requests.reload() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.count, 8)
        XCTAssertEqual(log.overlaps, 0, "no reload began while another ran")
        XCTAssertEqual(Set(outcomes.map { "\($0)" }).count, 8, "each asker got its own reload's outcome")
    }

    func testTheOutcomeIsTheMethodsAnswer() throws {
        XCTAssertEqual(try ReloadRequests.Outcome.reloaded(services: ["calc", "kv"]).result(), ["services": ["calc", "kv"], "refused": []])
        // A reload that refused a handler applied the rest: no error, but the refusal is in the answer.
        let refusal = RPCHandlerRefusal(
            handler: "kv", service: "kv", file: "/etc/rpcd/handlers.d/kv.conf", line: 4, reason: "MaxKeys= bad",
            previousServes: true)
        XCTAssertEqual(
            try ReloadRequests.Outcome.reloaded(services: ["calc", "kv"], refused: [refusal]).result(),
            ["services": ["calc", "kv"], "refused": [[
                "handler": "kv", "service": "kv", "file": "/etc/rpcd/handlers.d/kv.conf", "line": 4, "reason": "MaxKeys= bad",
                "previous_serves": true,
            ]]])
        XCTAssertThrowsError(try ReloadRequests.Outcome.failed("calc.conf:3: bad").result()) { error in
            XCTAssertEqual(error as? RPCError, .reloadFailed("calc.conf:3: bad"))
            XCTAssertEqual((error as? RPCError)?.code, -32013)
        }
    }
}

/// Counts reloads that begin while another is running.
private final class ReloadLog: @unchecked Sendable {
    private let lock = NSLock()
    private var running = false
    private var count = 0
    private(set) var overlaps = 0

    func begin() -> Int {
        lock.lock(); defer { lock.unlock() }
        if running { overlaps += 1 }
        running = true
        count += 1
        return count
    }

    func end(_: Int) {
        lock.lock(); defer { lock.unlock() }
        running = false
    }
}
