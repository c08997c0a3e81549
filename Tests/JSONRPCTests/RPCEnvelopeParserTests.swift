import JSONRPC
import NIOCore
import RPCJSON
import RPCProtocol
import XCTest

final class RPCEnvelopeParserTests: XCTestCase {
    private let parser = RPCEnvelopeParser(maxNestingDepth: 8, maxBatchLength: 4)

    private struct NotARequest: Error {}

    private func request(_ payload: String) throws -> RPCRequest {
        let message = parser.parse(ByteBuffer(string: payload))
        guard case .single(.request(let request)) = message else {
            XCTFail("not a request: \(payload) -> \(message)")
            throw NotARequest()
        }
        return request
    }

    func testParamsAndIdAreSlicesOfTheFrameNotCopies() throws {
        let payload = #"{"id" : 12 , "params":{"a": [1, 2]},"method":"calc.add","jsonrpc":"2.0"}"#
        let frame = ByteBuffer(string: payload)
        guard case .single(.request(let request)) = parser.parse(frame) else { return XCTFail("not a request") }
        XCTAssertEqual(request.method, "calc.add")
        XCTAssertEqual(request.params.map { String(buffer: $0) }, #"{"a": [1, 2]}"#, "exact bytes, whitespace kept")
        XCTAssertEqual(request.id?.description, "12")
        // Slices share the frame's storage: no copy on the hot path.
        frame.withUnsafeReadableBytes { frameBytes in
            request.params!.withUnsafeReadableBytes { paramBytes in
                XCTAssertTrue(frameBytes.baseAddress! <= paramBytes.baseAddress!
                    && paramBytes.baseAddress! + paramBytes.count <= frameBytes.baseAddress! + frameBytes.count)
            }
        }
    }

    func testNotificationHasNoIdAndNullIdIsNotANotification() throws {
        XCTAssertNil(try request(#"{"jsonrpc":"2.0","method":"a.b"}"#).id)
        XCTAssertEqual(try request(#"{"jsonrpc":"2.0","method":"a.b","id":null}"#).id, .null)
    }

    func testMethodWithEscapesIsDecoded() throws {
        XCTAssertEqual(try request(#"{"jsonrpc":"2.0","method":"calc.\u0061dd","id":1}"#).method, "calc.add")
    }

    /// Member names and the version are compared as decoded strings: escapes name the same members, and a
    /// name one byte off (in length or content) is another member.
    func testEnvelopeNamesAndVersionWrittenWithEscapesAreTheSame() throws {
        let escaped = #"{"\u006asonrpc":"\u0032.0","\u006dethod":"a.b","p\u0061rams":[1],"\u0069d":7}"#
        let request = try request(escaped)
        XCTAssertEqual(request.method, "a.b")
        XCTAssertEqual(request.params.map { String(buffer: $0) }, "[1]")
        XCTAssertEqual(request.id?.description, "7")
        guard case .single(.invalid(nil, let error)) = parser.parse(ByteBuffer(string: #"{"jsonrpc":"2.0","method":"a.b","id":1,"\u0069d":2}"#))
        else { return XCTFail("a repeated id written with an escape is not refused") }
        XCTAssertEqual(error.data, ["detail": "member 'id' appears more than once"])
        for nearMiss in [#""jsonrpC""#, #""jsonrpcs""#, #""Method""#, #""methods""#, #""param""#, #""ID""#, #""i""#] {
            let payload = #"{"jsonrpc":"2.0","method":"a.b","id":1,\#(nearMiss):{"x":1}}"#
            XCTAssertNil(try self.request(payload).params, nearMiss)
        }
        for version in [#""2.0 ""#, #""2.1""#, #""2\u002e1""#, #""\u0032.""#] {
            guard case .single(.invalid(let id, _)) = parser.parse(ByteBuffer(string: #"{"jsonrpc":\#(version),"method":"a.b","id":3}"#))
            else { return XCTFail("version \(version) accepted") }
            XCTAssertEqual(id?.description, "3")
        }
    }

    func testUnknownMembersAreIgnored() throws {
        XCTAssertEqual(try request(#"{"jsonrpc":"2.0","method":"a.b","extra":{"deep":[1]},"id":1}"#).method, "a.b")
    }

    func testBatchEntriesKeepTheirOrderAndInvalidOnesAreMarked() {
        guard case .batch(let entries) = parser.parse(ByteBuffer(string: #"[{"jsonrpc":"2.0","method":"a.b","id":1}, 5, {"id":2}]"#))
        else { return XCTFail("not a batch") }
        XCTAssertEqual(entries.count, 3)
        guard case .request = entries[0], case .invalid(nil, let error) = entries[1], case .invalid(let id, _) = entries[2]
        else { return XCTFail("\(entries)") }
        XCTAssertEqual(error.code, RPCError.Code.invalidRequest)
        XCTAssertEqual(id?.description, "2")
    }

    func testWholeMessageFailures() {
        let cases: [(String, Int)] = [
            ("", -32700), ("{", -32700), ("[", -32700), (#"{"a":1} {}"#, -32700), ("[] x", -32700),
            ("[]", -32600), ("true", -32600),
            (String(repeating: "[", count: 9) + String(repeating: "]", count: 9), -32002),
            ("[1,2,3,4,5]", -32001),
        ]
        for (payload, code) in cases {
            guard case .failure(let error) = parser.parse(ByteBuffer(string: payload)) else {
                XCTFail("expected a failure for \(payload)")
                continue
            }
            XCTAssertEqual(error.code, code, payload)
        }
    }
}

final class RPCReplyWriterTests: XCTestCase {
    func testResultWrapsRawBytes() {
        var buffer = ByteBuffer()
        RPCReplyWriter.writeResult(ByteBuffer(string: #"{"x": 1.50}"#), id: RPCID("a\"b"), into: &buffer)
        XCTAssertEqual(String(buffer: buffer), #"{"jsonrpc":"2.0","result":{"x": 1.50},"id":"a\"b"}"#)
    }

    /// The reply is copied in one pass into the buffer's memory: after what the buffer holds already, from
    /// a result that is a slice of a larger buffer, exactly `resultLength` bytes.
    func testResultIsAppendedFromSlicesInItsKnownLength() {
        var buffer = ByteBuffer(string: "head")
        var source = ByteBuffer(string: "xx[1,2]yy")
        source.moveReaderIndex(forwardBy: 2)
        let result = source.getSlice(at: source.readerIndex, length: 5)!
        let id = RPCID(rawJSON: ByteBuffer(string: "42"))
        RPCReplyWriter.writeResult(result, id: id, into: &buffer)
        XCTAssertEqual(String(buffer: buffer), #"head{"jsonrpc":"2.0","result":[1,2],"id":42}"#)
        XCTAssertEqual(buffer.readableBytes - 4, RPCReplyWriter.resultLength(result, id: id))
    }

    func testErrorEscapesMessageAndWritesDataAndNullId() {
        var buffer = ByteBuffer()
        let error = RPCError(code: -32000, message: "line\nbreak \"quoted\"", data: ["limit": 5])
        RPCReplyWriter.writeError(error, id: nil, into: &buffer)
        XCTAssertEqual(String(buffer: buffer),
                       #"{"jsonrpc":"2.0","error":{"code":-32000,"message":"line\nbreak \"quoted\"","data":{"limit":5}},"id":null}"#)
        XCTAssertNoThrow(try JSONValue(parsing: String(buffer: buffer)))
    }

    func testBatchJoinsReplies() {
        var buffer = ByteBuffer()
        RPCReplyWriter.writeBatch([ByteBuffer(string: "1"), ByteBuffer(string: "2")], into: &buffer)
        XCTAssertEqual(String(buffer: buffer), "[1,2]")
    }

    func testNonRPCErrorsBecomeInternalError() {
        struct Secret: Error {}
        XCTAssertEqual(RPCError(from: Secret()), .internalError)
        XCTAssertEqual(RPCError(from: RPCError.methodNotFound("x.y")).code, -32601)
    }
}
