import JSONRPC
import NIOCore
import RPCCore
import RPCJSON
import XCTest

final class RouterTests: XCTestCase {
    func testIdsAreEchoedByteForByte() throws {
        let harness = try RouterHarness(services: [SpecService()])
        for id in ["123456789012345678901234567890", "1.50", "-0", "1e400", #""\u0041b""#, #""é😀""#, "null"] {
            let reply = harness.send(#"{"jsonrpc":"2.0","method":"spec.sum","params":[],"id":\#(id)}"#)
            XCTAssertEqual(reply.text, #"{"jsonrpc":"2.0","result":0,"id":\#(id)}"#)
        }
    }

    func testInvalidRequestsNameTheProblemAndKeepAValidId() throws {
        let harness = try RouterHarness(services: [SpecService()])
        let cases: [(String, JSONValue, String)] = [
            (#"{"jsonrpc":"1.0","method":"spec.sum","id":1}"#, 1, "jsonrpc"),
            (#"{"method":"spec.sum","id":1}"#, 1, "jsonrpc"),
            (#"{"jsonrpc":"2.0","id":2}"#, 2, "'method' is missing"),
            (#"{"jsonrpc":"2.0","method":"spec.sum","params":3,"id":3}"#, 3, "params"),
            (#"{"jsonrpc":"2.0","method":"spec.sum","params":"x","id":4}"#, 4, "params"),
            (#"{"jsonrpc":"2.0","method":"spec.sum","id":{"a":1}}"#, .null, "'id'"),
            (#"{"jsonrpc":"2.0","method":"spec.sum","id":true}"#, .null, "'id'"),
            (#"{"jsonrpc":"2.0","method":"spec.sum","method":"spec.sum","id":5}"#, 5, "more than once"),
            (#"{"jsonrpc":"2.0","method":"spec.sum","id":6,"id":7}"#, .null, "'id' appears more than once"),
            (#"{}"#, .null, "jsonrpc"),
            ("42", .null, "request object"),
            (#""text""#, .null, "request object"),
        ]
        for (payload, id, detail) in cases {
            let reply = try harness.call(payload)
            XCTAssertEqual(reply["error"]?["code"], -32600, payload)
            XCTAssertEqual(reply["id"], id, payload)
            XCTAssertTrue(reply["error"]?["data"]?["detail"]?.stringValue?.contains(detail) ?? false, "\(payload): \(reply)")
        }
    }

    func testEscapedMemberNamesAreRecognised() throws {
        let harness = try RouterHarness(services: [SpecService()])
        let reply = try harness.call(#"{"jsonrpc":"2.0","\u006dethod":"spec.sum","params":[2,3],"id":1}"#)
        XCTAssertEqual(reply["result"], 5)
    }

    func testMalformedPayloadsAreParseErrors() throws {
        let harness = try RouterHarness(services: [SpecService()])
        for payload in ["", "   ", "{", #"{"jsonrpc":"2.0","method":"spec.sum","id":1} x"#, "\u{FF}", "[1,]", "nul"] {
            let reply = try harness.call(payload)
            XCTAssertEqual(reply["error"]?["code"], -32700, payload)
            XCTAssertEqual(reply["id"], .null, payload)
        }
    }

    func testInvalidUTF8IsAParseError() throws {
        let harness = try RouterHarness(services: [SpecService()])
        let box = RouterHarness.Reply()
        var bytes = ByteBuffer(string: #"{"jsonrpc":"2.0","method":"spec.sum","id":""#)
        bytes.writeBytes([0xC0, 0x80, UInt8(ascii: "\""), UInt8(ascii: "}")])
        harness.router.dispatch(harness.router.parser.parse(bytes), connection: RouterHarness.connection,
                                eventLoop: harness.loop) { box.complete($0) }
        XCTAssertEqual(try JSONValue(parsing: XCTUnwrap(box.text))["error"]?["code"], -32700)
    }

    func testNestingLimitCountsTheRequestObject() throws {
        let harness = try RouterHarness(services: [SpecService()], maxNestingDepth: 4)
        // Levels: request object 1, params array 2, [[ ]] 3 and 4.
        let atLimit = #"{"jsonrpc":"2.0","method":"spec.sum","params":[[[]]],"id":1}"#
        XCTAssertEqual(try harness.call(atLimit)["result"], 0)
        let overLimit = #"{"jsonrpc":"2.0","method":"spec.sum","params":[[[[]]]],"id":1}"#
        let reply = try harness.call(overLimit)
        XCTAssertEqual(reply["error"]?["code"], -32002)
        XCTAssertEqual(reply["error"]?["data"]?["limit"], 4)
    }

    func testHostileDepthIsAnErrorNotACrash() throws {
        let harness = try RouterHarness(services: [SpecService()])
        let deep = String(repeating: "[", count: 1_000_000)
        XCTAssertEqual(try harness.call(deep)["error"]?["code"], -32002)
        let deepParams = #"{"jsonrpc":"2.0","method":"spec.sum","params":"# + String(repeating: "{\"a\":", count: 200_000)
        XCTAssertEqual(try harness.call(deepParams)["error"]?["code"], -32002)
    }

    func testBatchLimit() throws {
        let harness = try RouterHarness(services: [SpecService()], maxBatchLength: 3)
        let entry = #"{"jsonrpc":"2.0","method":"spec.sum","params":[1],"id":1}"#
        XCTAssertEqual(try harness.call("[\(entry),\(entry),\(entry)]").arrayValue?.count, 3)
        let reply = try harness.call("[\(entry),\(entry),\(entry),\(entry)]")
        XCTAssertEqual(reply["error"]?["code"], -32001)
        XCTAssertEqual(reply["id"], .null)
    }

    /// A small batch must not make rpcd build a huge reply (issue 14, amplifying batches): past the limit the
    /// batch gets one -32008 instead of its replies.
    func testABatchWhoseRepliesPassTheLimitGetsOneError() throws {
        let harness = try RouterHarness(services: [SpecService()], maxReplySize: 200)
        let entry = #"{"jsonrpc":"2.0","method":"spec.get_data","id":1}"#  // each reply is about 40 bytes
        XCTAssertEqual(try harness.call("[\(entry),\(entry),\(entry)]").arrayValue?.count, 3)
        let reply = try harness.call("[" + Array(repeating: entry, count: 10).joined(separator: ",") + "]")
        XCTAssertEqual(reply, ["jsonrpc": "2.0", "error": ["code": -32008, "message": "Reply too large", "data": ["limit": 200]], "id": .null])
    }

    func testUnexpectedErrorsBecomeInternalErrorWithoutDetails() throws {
        let harness = try RouterHarness(services: [SpecService()])
        let reply = try harness.call(#"{"jsonrpc":"2.0","method":"spec.explode","id":1}"#)
        XCTAssertEqual(reply, ["jsonrpc": "2.0", "error": ["code": -32603, "message": "Internal error"], "id": 1])
    }

    /// A result that overflows to infinity used to trap in the JSON writer and kill the daemon with one packet
    /// (issue 14): it is an internal error now, and the router serves on.
    func testNonFiniteResultsAreInternalErrorsNotCrashes() throws {
        let harness = try RouterHarness(services: [SpecService()])
        for params in ["[1e308, 10]", "[-1e308, 1e308, 10]"] {
            let reply = try harness.call(#"{"jsonrpc":"2.0","method":"spec.product","params":\#(params),"id":1}"#)
            XCTAssertEqual(reply, ["jsonrpc": "2.0", "error": ["code": -32603, "message": "Internal error"], "id": 1])
        }
        XCTAssertEqual(try harness.call(#"{"jsonrpc":"2.0","method":"spec.product","params":[2, 3],"id":2}"#)["result"], 6)
    }

    func testApplicationErrorsKeepCodeAndData() throws {
        let harness = try RouterHarness(services: [SpecService()])
        let reply = try harness.call(#"{"jsonrpc":"2.0","method":"spec.subtract","params":[1],"id":1}"#)
        XCTAssertEqual(reply["error"]?["code"], -32602)
        XCTAssertEqual(reply["error"]?["data"]?["detail"], "expected minuend and subtrahend")
    }

    func testReplacingTheRegistryRoutesNewCallsOnly() throws {
        let harness = try RouterHarness(services: [SpecService()])
        XCTAssertEqual(try harness.call(#"{"jsonrpc":"2.0","method":"spec.sum","params":[1],"id":1}"#)["result"], 1)
        harness.router.replaceRegistry(try RPCServiceRegistry(services: []))
        XCTAssertEqual(try harness.call(#"{"jsonrpc":"2.0","method":"spec.sum","params":[1],"id":1}"#)["error"]?["code"], -32601)
    }

    func testRegistryRefusesConflicts() {
        XCTAssertThrowsError(try RPCServiceRegistry(services: [SpecService(), SpecService()])) { error in
            XCTAssertEqual("\(error)", "service 'spec' is registered twice")
        }
    }
}
