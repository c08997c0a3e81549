import RPCClientTools
import RPCJSON
import XCTest

final class RPCCallArgumentsTests: XCTestCase {
    func testNoArgumentsMeansNoParams() throws {
        XCTAssertNil(try RPCCallArguments.params(from: []))
    }

    func testKeyValueArgumentsMakeByNameParams() throws {
        XCTAssertEqual(
            try RPCCallArguments.params(from: ["name=bob", "n=3", "flag=true", "list=[1,2]", "nothing=null"]),
            ["name": "bob", "n": 3, "flag": true, "list": [1, 2], "nothing": nil])
    }

    func testBareArgumentsMakeByPositionParams() throws {
        XCTAssertEqual(
            try RPCCallArguments.params(from: ["1", "2.5", "hello", #""quoted""#, #"{"a":1}"#]),
            [1, .number("2.5"), "hello", "quoted", ["a": 1]])
    }

    func testValuesThatAreNotJSONStayStrings() throws {
        XCTAssertEqual(try RPCCallArguments.params(from: ["s=3x", "t=", "u=a=b"]), ["s": "3x", "t": "", "u": "a=b"])
        XCTAssertEqual(try RPCCallArguments.params(from: ["[1,", "01"]), ["[1,", "01"])
    }

    func testQuotedJSONStringKeepsDigitsAsText() throws {
        XCTAssertEqual(try RPCCallArguments.params(from: [#"zip="01234""#]), ["zip": "01234"])
    }

    func testJSONWithEqualsSignIsPositional() throws {
        XCTAssertEqual(try RPCCallArguments.params(from: [#"{"a":"b=c"}"#]), [["a": "b=c"]])
    }

    func testMixingFormsIsAnError() {
        XCTAssertThrowsError(try RPCCallArguments.params(from: ["a=1", "2"])) { error in
            XCTAssertTrue("\(error)".contains("cannot mix"), "\(error)")
        }
    }

    func testEmptyAndRepeatedKeysAreErrors() {
        XCTAssertThrowsError(try RPCCallArguments.params(from: ["=1"]))
        XCTAssertThrowsError(try RPCCallArguments.params(from: ["a=1", "a=2"])) { error in
            XCTAssertTrue("\(error)".contains("'a'"), "\(error)")
        }
    }

    func testParamsJSONMustBeArrayOrObject() throws {
        XCTAssertEqual(try RPCCallArguments.params(json: #"{"ms": 5}"#), ["ms": 5])
        XCTAssertEqual(try RPCCallArguments.params(json: "[5]"), [5])
        XCTAssertThrowsError(try RPCCallArguments.params(json: "5"))
        XCTAssertThrowsError(try RPCCallArguments.params(json: "{")) { error in
            XCTAssertTrue("\(error)".contains("not valid JSON"), "\(error)")
        }
    }
}
