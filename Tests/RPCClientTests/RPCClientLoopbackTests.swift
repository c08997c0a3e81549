import NIOCore
import NIOPosix
import RPCJSON
import RPCTestSupport
import RPCWire
import XCTest

@testable import RPCClient

/// End to end over a real TCP socket to `LoopbackServer`.
final class RPCClientLoopbackTests: XCTestCase {
    private var server: LoopbackServer!

    override func setUp() async throws {
        server = try await LoopbackServer.start()
    }

    override func tearDown() async throws {
        await server.stop()
    }

    func testCallNotifyAndErrors() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        XCTAssertTrue(client.isConnected)
        let pong = try await client.call("t.ping")
        XCTAssertEqual(pong, "pong")
        let echoed = try await client.call("t.echo", params: ["a": [1, 2], "b": "x"])
        XCTAssertEqual(echoed, ["a": [1, 2], "b": "x"])
        try await client.notify("t.echo", params: [1])
        do {
            _ = try await client.call("t.fail")
            XCTFail("t.fail must throw")
        } catch {
            XCTAssertEqual(error, .remote(RPCError(code: 7, message: "Failed", data: ["why": "asked"])))
        }
        do {
            _ = try await client.call("t.ping", params: "not allowed")
            XCTFail("string params must be refused")
        } catch {
            guard case .protocolViolation = error else { return XCTFail("\(error)") }
        }
        await client.close()
        XCTAssertFalse(client.isConnected)
    }

    func testConcurrentCallsArePipelinedAndAnsweredOutOfOrder() async throws {
        let server = try XCTUnwrap(self.server)
        let client = try await RPCClient.connect(to: server.endpoint)
        let clock = ContinuousClock()
        let start = clock.now
        let order = try await withThrowingTaskGroup(of: (Int, JSONValue).self) { group in
            group.addTask { (0, try await client.call("t.sleep", params: [300])) }
            group.addTask {
                // Only once the sleep is in the server: the ping is sent after it on the same connection.
                try await waitUntil("the sleep to reach the server") { server.received.contains("t.sleep") }
                return (1, try await client.call("t.ping"))
            }
            var order: [Int] = []
            for try await (index, _) in group { order.append(index) }
            return order
        }
        XCTAssertEqual(order, [1, 0], "the ping overtakes the sleep on the same connection")
        XCTAssertLessThan(clock.now - start, .seconds(2))
        await client.close()
    }

    func testBatchResultsInCallOrder() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        let results = try await client.batch([
            (method: "t.ping", params: nil), (method: "t.fail", params: nil), (method: "t.echo", params: [3]),
        ])
        XCTAssertEqual(results.count, 3)
        XCTAssertEqual(try results[0].get(), "pong")
        XCTAssertEqual(results[1], .failure(.remote(RPCError(code: 7, message: "Failed", data: ["why": "asked"]))))
        XCTAssertEqual(try results[2].get(), [3])
        let empty = try await client.batch([])
        XCTAssertTrue(empty.isEmpty)
        await client.close()
    }

    func testServerClosingFailsPendingCallsWithConnectionClosed() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        async let slow = client.call("t.sleep", params: [5000])
        try await waitUntil("the sleep to reach the server") { server.received.contains("t.sleep") }
        let closing = try await client.sendRaw(Array(#"{"jsonrpc":"2.0","method":"t.close","id":99}"#.utf8))
        XCTAssertNil(closing, "the server closed instead of answering")
        do {
            _ = try await slow
            XCTFail("the pending call must fail")
        } catch {
            XCTAssertEqual(error as? RPCClientError, .connectionClosed)
        }
        // The client reconnects for the next call; once closed by its owner, it stays closed.
        let again = try await client.call("t.ping")
        XCTAssertEqual(again, "pong")
        await client.close()
        do {
            _ = try await client.call("t.ping")
            XCTFail("a call on a closed client must fail")
        } catch {
            XCTAssertEqual(error, .connectionClosed)
        }
    }

    /// The server stops in the middle of 100 pipelined calls that change state: the calls after its cut are
    /// sent again on a new connection, so every call succeeds and none runs twice; a call of unknown fate
    /// fails, unless it is idempotent.
    func testAServersCutIsSentAgainAndNothingRunsTwice() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        let results = try await withThrowingTaskGroup(of: JSONValue.self) { group in
            for index in 0..<101 {
                group.addTask { try await client.call(index == 50 ? "t.cut" : "t.incr") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(Set(results.compactMap(\.intValue)), Set(1...100))
        XCTAssertTrue(results.contains("ran"))
        XCTAssertEqual(server.count, 100)

        server.allowEnds(1)
        do {
            _ = try await client.call("t.closeOnce")
            XCTFail("the connection ended without a word: the call may have run")
        } catch {
            XCTAssertEqual(error, .connectionClosed)
        }
        server.allowEnds(1)
        let again = try await client.call("t.closeOnce", options: RPCCallOptions(idempotent: true))
        XCTAssertEqual(again, "ran")
        await client.close()
    }

    func testSendRawReturnsTheServersAnswerToGarbage() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        let reply = try await client.sendRaw(Array("{oops".utf8))
        XCTAssertEqual(reply?["error"]?["code"], -32700)
        XCTAssertEqual(reply?["id"], .null)
        let none = try await client.sendRaw(Array(#"{"jsonrpc":"2.0","method":"t.ping"}"#.utf8), expectReply: false)
        XCTAssertNil(none)
        let pong = try await client.call("t.ping")
        XCTAssertEqual(pong, "pong", "the connection is still usable")
        await client.close()
    }

    func testUnframedRawBytesCanSplitAFrame() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        let payload = Array(#"{"jsonrpc":"2.0","method":"t.ping","id":"raw"}"#.utf8)
        let header: [UInt8] = [0, 0, 0, UInt8(payload.count)]
        let nothing = try await client.sendRaw(header + payload.prefix(10), expectReply: false, framed: false)
        XCTAssertNil(nothing)
        let reply = try await client.sendRaw(Array(payload.dropFirst(10)), framed: false)
        XCTAssertEqual(reply?["result"], "pong")
        XCTAssertEqual(reply?["id"], "raw")
        await client.close()
    }

    func testOversizedAnnouncedLengthIsAnsweredAndClosed() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        let reply = try await client.sendRaw([0x7F, 0, 0, 0], framed: false)
        XCTAssertEqual(reply?["error"]?["code"], -32000)
        // The server closes after a frame-too-large error.
        try await waitUntil("the client to notice the closed connection") { !client.isConnected }
        do {
            _ = try await client.sendRaw(Array("{}".utf8))
            XCTFail("sendRaw on a closed connection must throw")
        } catch {
            XCTAssertEqual(error, .connectionClosed)
        }
    }

    func testMalformedReplyIsAProtocolViolation() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        do {
            _ = try await client.call("t.bad")
            XCTFail("t.bad must throw")
        } catch {
            guard case .protocolViolation = error else { return XCTFail("\(error)") }
        }
        await client.close()
    }

    func testCallTimeout() async throws {
        let client = try await RPCClient.connect(to: server.endpoint)
        do {
            _ = try await client.call("t.sleep", params: [2000], timeout: .milliseconds(100))
            XCTFail("must time out")
        } catch {
            XCTAssertEqual(error, .timedOut)
        }
        await client.close()
    }
}

/// Connection failures need no server.
final class RPCClientConnectTests: XCTestCase {
    func testRefusedConnectionNamesEndpointAndReason() async {
        do {
            _ = try await RPCClient.connect(to: .tcp(host: "127.0.0.1", port: 1))
            XCTFail("port 1 must refuse")
        } catch {
            XCTAssertEqual(error, .connectFailed(endpoint: "127.0.0.1:1", reason: "connection refused"))
            XCTAssertEqual(error.description, "cannot connect to 127.0.0.1:1: connection refused")
        }
    }

    func testMissingUnixSocket() async {
        do {
            _ = try await RPCClient.connect(to: .unix(path: "/nonexistent/rpcd.sock"))
            XCTFail("a missing socket must fail")
        } catch {
            XCTAssertEqual(
                error, .connectFailed(endpoint: "/nonexistent/rpcd.sock", reason: "no such file or directory"))
        }
    }
}
