import RPCCore
import RPCJSON
import XCTest

/// Every example of the JSON-RPC 2.0 specification (section 7), method names mapped onto service `spec`.
final class SpecificationExamplesTests: XCTestCase {
    private var harness: RouterHarness!

    override func setUpWithError() throws {
        harness = try RouterHarness(services: [SpecService()])
    }

    func testPositionalParameters() throws {
        XCTAssertEqual(try harness.call(#"{"jsonrpc": "2.0", "method": "spec.subtract", "params": [42, 23], "id": 1}"#),
                       ["jsonrpc": "2.0", "result": 19, "id": 1])
        XCTAssertEqual(try harness.call(#"{"jsonrpc": "2.0", "method": "spec.subtract", "params": [23, 42], "id": 2}"#),
                       ["jsonrpc": "2.0", "result": -19, "id": 2])
    }

    func testNamedParameters() throws {
        XCTAssertEqual(
            try harness.call(#"{"jsonrpc": "2.0", "method": "spec.subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#),
            ["jsonrpc": "2.0", "result": 19, "id": 3])
        XCTAssertEqual(
            try harness.call(#"{"jsonrpc": "2.0", "method": "spec.subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}"#),
            ["jsonrpc": "2.0", "result": 19, "id": 4])
    }

    func testNotificationsGetNoReply() {
        for payload in [#"{"jsonrpc": "2.0", "method": "spec.update", "params": [1,2,3,4,5]}"#,
                        #"{"jsonrpc": "2.0", "method": "spec.foobar"}"#] {
            let reply = harness.send(payload)
            XCTAssertTrue(reply.isComplete)
            XCTAssertNil(reply.text, payload)
        }
    }

    func testNonExistentMethod() throws {
        let reply = try harness.call(#"{"jsonrpc": "2.0", "method": "spec.foobar", "id": "1"}"#)
        XCTAssertEqual(reply["error"]?["code"], -32601)
        XCTAssertEqual(reply["error"]?["message"], "Method not found")
        XCTAssertEqual(reply["id"], "1")
    }

    func testInvalidJSON() throws {
        let reply = try harness.call(#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#)
        XCTAssertEqual(reply["error"]?["code"], -32700)
        XCTAssertEqual(reply["id"], .null)
    }

    func testInvalidRequestObject() throws {
        let reply = try harness.call(#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#)
        XCTAssertEqual(reply["error"]?["code"], -32600)
        XCTAssertEqual(reply["id"], .null)
    }

    func testBatchWithInvalidJSON() throws {
        let reply = try harness.call(#"""
            [
              {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
              {"jsonrpc": "2.0", "method"
            ]
            """#)
        XCTAssertEqual(reply["error"]?["code"], -32700, "a single error object, not an array")
        XCTAssertEqual(reply["id"], .null)
    }

    func testEmptyArray() throws {
        let reply = try harness.call("[]")
        XCTAssertEqual(reply["error"]?["code"], -32600)
        XCTAssertEqual(reply["id"], .null)
    }

    func testInvalidBatchButNotEmpty() throws {
        let reply = try harness.call("[1]")
        XCTAssertEqual(reply.arrayValue?.count, 1)
        XCTAssertEqual(reply[0]?["error"]?["code"], -32600)
        XCTAssertEqual(reply[0]?["id"], .null)
    }

    func testInvalidBatch() throws {
        let reply = try harness.call("[1,2,3]")
        XCTAssertEqual(reply.arrayValue?.map { $0["error"]?["code"] }, [-32600, -32600, -32600])
    }

    func testMixedBatch() throws {
        let reply = try harness.call(#"""
            [
                {"jsonrpc": "2.0", "method": "spec.sum", "params": [1,2,4], "id": "1"},
                {"jsonrpc": "2.0", "method": "spec.notify_hello", "params": [7]},
                {"jsonrpc": "2.0", "method": "spec.subtract", "params": [42,23], "id": "2"},
                {"foo": "boo"},
                {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
                {"jsonrpc": "2.0", "method": "spec.get_data", "id": "9"}
            ]
            """#)
        let replies = try XCTUnwrap(reply.arrayValue)
        XCTAssertEqual(replies.count, 5, "one reply per entry with an id, plus the invalid one")
        func success(id: JSONValue) -> JSONValue? { replies.first { $0["id"] == id && $0["error"] == nil } }
        XCTAssertEqual(success(id: "1")?["result"], 7)
        XCTAssertEqual(success(id: "2")?["result"], 19)
        XCTAssertEqual(success(id: "9")?["result"], ["hello", 5])
        XCTAssertEqual(replies.first { $0["id"] == "5" }?["error"]?["code"], -32601)
        XCTAssertEqual(replies.first { $0["id"] == .null }?["error"]?["code"], -32600)
    }

    func testBatchOfNotificationsOnlyGetsNoReplyAtAll() {
        let reply = harness.send(#"""
            [
                {"jsonrpc": "2.0", "method": "spec.notify_sum", "params": [1,2,4]},
                {"jsonrpc": "2.0", "method": "spec.notify_hello", "params": [7]}
            ]
            """#)
        XCTAssertTrue(reply.isComplete)
        XCTAssertNil(reply.text)
    }
}
