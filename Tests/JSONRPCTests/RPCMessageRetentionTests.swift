import JSONRPC
import NIOCore
import XCTest

/// A parsed message keeps only what its calls use of a large frame (issue 14: frames pinned by slices).
final class RPCMessageRetentionTests: XCTestCase {
    private let parser = RPCEnvelopeParser()

    func testSmallFramesAreKeptWhole() {
        let frame = ByteBuffer(string: #"{"jsonrpc":"2.0","method":"a.b","params":[1],"id":7}"#)
        var message = parser.parse(frame)
        let retained = message.retainOnlyWhatCallsUse(frameSize: frame.readableBytes)
        XCTAssertEqual(retained, frame.readableBytes)
    }

    func testMostlyParamsFramesAreKeptWhole() {
        let params = "[" + String(repeating: "1,", count: 5000) + "1]"
        let frame = ByteBuffer(string: #"{"jsonrpc":"2.0","method":"a.b","params":\#(params),"id":7}"#)
        var message = parser.parse(frame)
        let retained = message.retainOnlyWhatCallsUse(frameSize: frame.readableBytes)
        XCTAssertEqual(retained, frame.readableBytes, "copying would save too little")
    }

    func testIgnoredMembersAreLeftBehindAndTheRestIsUnchanged() throws {
        let padding = String(repeating: "x", count: 50_000)
        let frame = ByteBuffer(string: #"""
            [{"jsonrpc":"2.0","method":"a.b","pad":"\#(padding)","params":{"k":"v"},"id":"first"},
             {"jsonrpc":"2.0","method":"a.c","params":[1,2]},
             {"jsonrpc":"1.0","id":3}]
            """#)
        var message = parser.parse(frame)
        let retained = message.retainOnlyWhatCallsUse(frameSize: frame.readableBytes)
        XCTAssertEqual(retained, #"{"k":"v"}"first"[1,2]3"#.utf8.count)
        guard case .batch(let entries) = message, entries.count == 3 else { return XCTFail("\(message)") }
        guard case .request(let first) = entries[0], case .request(let second) = entries[1],
              case .invalid(let id, let error) = entries[2] else { return XCTFail("\(entries)") }
        XCTAssertEqual(first.params.map { String(buffer: $0) }, #"{"k":"v"}"#)
        XCTAssertEqual(first.id?.description, #""first""#)
        XCTAssertEqual(second.params.map { String(buffer: $0) }, "[1,2]")
        XCTAssertNil(second.id)
        XCTAssertEqual(id?.description, "3")
        XCTAssertEqual(error.code, -32600)
    }
}
