import RPCClientTools
import XCTest

final class RPCReplySummaryTests: XCTestCase {
    private func scan(_ text: String) -> RPCReplySummary? {
        RPCReplySummary(Array(text.utf8))
    }

    func testFindsIDAtTheEnd() {
        XCTAssertEqual(scan(#"{"jsonrpc":"2.0","result":"pong","id":17}"#), .init(id: 17, isError: false))
    }

    func testFindsIDAnywhereWithWhitespace() {
        XCTAssertEqual(scan(#" { "id" : 3 , "result" : [1,{"id":9}] } "#), .init(id: 3, isError: false))
    }

    func testDetectsTopLevelErrorOnly() {
        XCTAssertEqual(
            scan(#"{"jsonrpc":"2.0","error":{"code":1,"message":"}\"]{"},"id":4}"#), .init(id: 4, isError: true))
        XCTAssertEqual(
            scan(#"{"jsonrpc":"2.0","result":{"error":"not me","s":"\"id\":5"},"id":6}"#), .init(id: 6, isError: false))
    }

    func testEchoedRequestMatchesByID() {
        XCTAssertEqual(scan(#"{"jsonrpc":"2.0","method":"rpcd.ping","params":[1,"a"],"id":0}"#), .init(id: 0, isError: false))
    }

    func testNonIntegerOrMissingIDIsNil() {
        XCTAssertEqual(scan(#"{"result":1,"id":null}"#), .init(id: nil, isError: false))
        XCTAssertEqual(scan(#"{"result":1,"id":"7"}"#), .init(id: nil, isError: false))
        XCTAssertEqual(scan(#"{"result":1,"id":1.5}"#), .init(id: nil, isError: false))
        XCTAssertEqual(scan(#"{"result":1}"#), .init(id: nil, isError: false))
    }

    func testNotAnObjectOrTruncatedIsNil() {
        XCTAssertNil(scan("[1,2]"))
        XCTAssertNil(scan(""))
        XCTAssertNil(scan(#"{"result":"pong","id":1"#))
        XCTAssertNil(scan(#"{"result":"unterminated}"#))
        XCTAssertNil(scan(#"{"result" 1}"#))
        XCTAssertNil(scan(#"{"result":1,}"#), "the scanner is strict JSON")
        XCTAssertNil(scan(#"{"result":1} {}"#))
    }
}
