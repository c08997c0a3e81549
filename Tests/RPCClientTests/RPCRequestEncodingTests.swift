import RPCClient
import RPCJSON
import XCTest

final class RPCRequestEncodingTests: XCTestCase {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    func testRequestWithAndWithoutParams() {
        XCTAssertEqual(
            text(RPCRequestEncoding.request(method: "rpcd.ping", params: nil, id: 1)),
            #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        XCTAssertEqual(
            text(RPCRequestEncoding.request(method: "calc.add", params: ["b": 2, "a": 1], id: 42)),
            #"{"jsonrpc":"2.0","method":"calc.add","params":{"a":1,"b":2},"id":42}"#)
    }

    func testMethodNameIsEscaped() throws {
        let bytes = RPCRequestEncoding.request(method: "a\"b\\c", params: nil, id: 1)
        XCTAssertEqual(try JSONValue(parsing: bytes)["method"], "a\"b\\c")
    }

    func testNotificationHasNoID() throws {
        let bytes = RPCRequestEncoding.notification(method: "log.write", params: ["x"])
        XCTAssertEqual(text(bytes), #"{"jsonrpc":"2.0","method":"log.write","params":["x"]}"#)
        XCTAssertNil(try JSONValue(parsing: bytes)["id"])
    }

    func testBatchIsAnArrayOfRequests() throws {
        let bytes = RPCRequestEncoding.batch([(method: "a.b", params: [1]), (method: "c.d", params: nil)], ids: [5, 6])
        let value = try JSONValue(parsing: bytes)
        XCTAssertEqual(value.arrayValue?.count, 2)
        XCTAssertEqual(value[0]?["id"], 5)
        XCTAssertEqual(value[1]?["method"], "c.d")
    }

    func testOnlyArraysAndObjectsAreValidParams() {
        XCTAssertNoThrow(try RPCRequestEncoding.validate(params: nil))
        XCTAssertNoThrow(try RPCRequestEncoding.validate(params: []))
        XCTAssertNoThrow(try RPCRequestEncoding.validate(params: [:]))
        XCTAssertThrowsError(try RPCRequestEncoding.validate(params: "x"))
        XCTAssertThrowsError(try RPCRequestEncoding.validate(params: 3))
        XCTAssertThrowsError(try RPCRequestEncoding.validate(params: .null))
    }
}
