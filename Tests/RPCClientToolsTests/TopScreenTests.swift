import RPCClientTools
import RPCJSON
import XCTest

final class TopScreenTests: XCTestCase {
    private func snapshot(calls: Int, okCalls: Int, buckets: [(Double, Int)], peers: [(String, Int)]) -> JSONValue {
        [
            "version": "0.1.0", "uptime_seconds": 75, "calls_in_flight": 2, "metrics": true,
            "methods": [[
                "service": "calc", "method": "add", "calls": .number(calls),
                "outcomes": ["ok": .number(okCalls), "-32602": .number(calls - okCalls)],
                "duration_buckets": .array(buckets.map { [.number($0.0), .number($0.1)] }),
            ]],
            "listeners": [["listener": "127.0.0.1:7390", "open": 3, "accepted": 3, "refused": 0,
                           "received_bytes": 1000, "sent_bytes": 2000]],
            "peers": .array(peers.map { ["peer": .string($0.0), "buffered_bytes": .number($0.1), "connections": 1, "calls": 0] }),
            "budget": ["buffered_bytes": 0, "limit": 134_217_728],
            "events": ["published": 0, "delivered": 0, "lost": 0, "subscriptions": 0],
            "process": ["cpu_seconds": 1, "resident_memory_bytes": 30_000_000],
        ]
    }

    func testRatesAndQuantilesComeFromTheInterval() {
        let before = snapshot(calls: 100, okCalls: 100, buckets: [(0.001, 100), (0.01, 100)], peers: [])
        let after = snapshot(
            calls: 300, okCalls: 290, buckets: [(0.001, 200), (0.01, 300)], peers: [("uid 0", 10), ("loopback", 900_000)])
        let screen = TopScreen(previous: before, current: after, interval: 2)
        let row = screen.methodRows().first
        XCTAssertEqual(row?.name, "calc.add")
        XCTAssertEqual(row?.callsPerSecond, 100)
        XCTAssertEqual(row?.errorsPerSecond, 5)
        XCTAssertEqual(row?.p50 ?? 0, 0.001, accuracy: 1e-9, "half of the interval's 200 calls took up to 1 ms")
        XCTAssertEqual(row?.p99 ?? 0, 0.001 + 0.009 * 0.98, accuracy: 1e-9)
        let lines = screen.lines
        XCTAssertTrue(lines.allSatisfy { $0.count <= 80 }, lines.joined(separator: "\n"))
        let peers = lines.firstIndex { $0.hasPrefix("PEER") }!
        XCTAssertTrue(lines[peers + 1].hasPrefix("loopback"), "the peer holding the most comes first")
    }

    /// rpcd names peers to administrators only: for anyone else, the screen shows the aggregate and says why.
    func testWithoutPeerNamesTheAggregateIsShown() throws {
        guard case .object(var unnamed) = snapshot(calls: 5, okCalls: 5, buckets: [], peers: []) else { return XCTFail() }
        unnamed["peers"] = nil
        unnamed["budget"] = ["buffered_bytes": 900_000, "limit": 134_217_728, "peers": 3, "largest_peer_bytes": 800_000]
        let lines = TopScreen(previous: .object(unnamed), current: .object(unnamed), interval: 1).lines
        let peers = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("PEER") })
        XCTAssertEqual(lines[peers + 1], "  3 peers, the heaviest holds 800.0 KB (names: administrators only)")
        XCTAssertTrue(lines.allSatisfy { $0.count <= 80 })
    }

    /// With `Metrics=no` rpcd still counts calls (rates are shown) but times none.
    func testMetricsOffShowsRatesWithoutQuantiles() throws {
        guard case .object(var before) = snapshot(calls: 10, okCalls: 10, buckets: [], peers: []),
              case .object(var after) = snapshot(calls: 30, okCalls: 30, buckets: [], peers: []) else { return XCTFail() }
        before["metrics"] = false
        after["metrics"] = false
        let screen = TopScreen(previous: .object(before), current: .object(after), interval: 1)
        XCTAssertEqual(screen.methodRows().first?.callsPerSecond, 20)
        XCTAssertNil(screen.methodRows().first?.p99)
        XCTAssertTrue(screen.lines.contains("metrics are off (Metrics=no): calls are counted, not timed (no p50, p99)"))
    }

    func testNoCallsNoQuantile() {
        let same = snapshot(calls: 5, okCalls: 5, buckets: [(0.001, 5)], peers: [])
        XCTAssertNil(TopScreen(previous: same, current: same, interval: 1).methodRows().first?.p50)
        XCTAssertEqual(TopScreen.Sort.name.next, .calls)
    }
}
