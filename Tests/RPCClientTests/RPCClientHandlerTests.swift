import NIOCore
import NIOEmbedded
import RPCTestSupport
import RPCJSON
import RPCWire
import XCTest

@testable import RPCClient

final class RPCClientHandlerTests: XCTestCase {
    func testCallWritesTheRequestAndCompletesWithTheResult() throws {
        let harness = try HandlerHarness()
        let call = try harness.call("calc.add", params: [1, 2], id: 7)
        XCTAssertEqual(try harness.sent(), #"{"jsonrpc":"2.0","method":"calc.add","params":[1,2],"id":7}"#)
        XCTAssertNil(outcome(call), "no reply yet")
        try harness.reply(#"{"jsonrpc":"2.0","result":3,"id":7}"#)
        XCTAssertEqual(value(call), .number(3))
        XCTAssertEqual(harness.handler.pendingCount, 0)
    }

    func testRepliesOutOfOrderAreMatchedByID() throws {
        let harness = try HandlerHarness()
        let first = try harness.call("echo.sleep", params: [50], id: 1)
        let second = try harness.call("rpcd.ping", id: 2)
        let third = try harness.call("echo.echo", params: ["x"], id: 3)
        try harness.reply(#"{"jsonrpc":"2.0","result":"pong","id":2}"#)
        XCTAssertEqual(value(second), "pong")
        XCTAssertNil(outcome(first))
        XCTAssertNil(outcome(third))
        try harness.reply(#"{"id":3,"result":["x"],"jsonrpc":"2.0"}"#)  // member order does not matter
        try harness.reply(#"{"jsonrpc":"2.0","result":"done","id":1}"#)
        XCTAssertEqual(value(first), "done")
        XCTAssertEqual(value(third), ["x"])
    }

    func testErrorObjectBecomesRemoteError() throws {
        let harness = try HandlerHarness()
        let call = try harness.call("calc.divide", params: [1, 0], id: 4)
        try harness.reply(
            #"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Division by zero","data":{"a":1}},"id":4}"#)
        XCTAssertEqual(clientError(call), .remote(RPCError(code: -32000, message: "Division by zero", data: ["a": 1])))

        let noData = try harness.call("kv.get", id: 5)
        try harness.reply(#"{"jsonrpc":"2.0","error":{"code":1,"message":"No such key"},"id":5}"#)
        XCTAssertEqual(clientError(noData), .remote(RPCError(code: 1, message: "No such key", data: nil)))
    }

    func testBatchRepliesAreMatchedByIDInCallOrder() throws {
        let harness = try HandlerHarness()
        let batch = try harness.batch(
            [(method: "calc.add", params: [1, 2]), (method: "kv.get", params: nil), (method: "rpcd.ping", params: nil)],
            ids: [10, 11, 12])
        XCTAssertEqual(
            try harness.sent(),
            #"[{"jsonrpc":"2.0","method":"calc.add","params":[1,2],"id":10},"#
                + #"{"jsonrpc":"2.0","method":"kv.get","id":11},{"jsonrpc":"2.0","method":"rpcd.ping","id":12}]"#)
        try harness.reply(
            #"[{"jsonrpc":"2.0","result":"pong","id":12},"#
                + #"{"jsonrpc":"2.0","error":{"code":1,"message":"No such key"},"id":11},"#
                + #"{"jsonrpc":"2.0","result":3,"id":10}]"#)
        let results = try XCTUnwrap(value(batch))
        XCTAssertEqual(results.count, 3)
        XCTAssertEqual(try results[0].get(), 3)
        XCTAssertEqual(results[1], .failure(.remote(RPCError(code: 1, message: "No such key", data: nil))))
        XCTAssertEqual(try results[2].get(), "pong")
        XCTAssertEqual(harness.handler.pendingCount, 0)
    }

    func testBatchReplyMissingAnEntryFailsThatEntryOnly() throws {
        let harness = try HandlerHarness()
        let batch = try harness.batch([(method: "a.b", params: nil), (method: "a.c", params: nil)], ids: [20, 21])
        try harness.reply(#"[{"jsonrpc":"2.0","result":true,"id":21}]"#)
        let results = try XCTUnwrap(value(batch))
        guard case .failure(.protocolViolation(let detail)) = results[0] else {
            return XCTFail("expected a protocol violation for id 20, got \(results[0])")
        }
        XCTAssertTrue(detail.contains("20"), detail)
        XCTAssertEqual(try results[1].get(), true)
    }

    func testBatchAndCallPipelinedTogether() throws {
        let harness = try HandlerHarness()
        let call = try harness.call("rpcd.ping", id: 1)
        let batch = try harness.batch([(method: "rpcd.ping", params: nil)], ids: [2])
        try harness.reply(#"[{"jsonrpc":"2.0","result":"b","id":2}]"#)
        try harness.reply(#"{"jsonrpc":"2.0","result":"a","id":1}"#)
        XCTAssertEqual(value(call), "a")
        XCTAssertEqual(try value(batch)?.first?.get(), "b")
    }

    func testBatchLevelErrorWithNullIDFailsTheOnlyPendingBatch() throws {
        let harness = try HandlerHarness()
        let batch = try harness.batch([(method: "a.b", params: nil), (method: "a.c", params: nil)], ids: [1, 2])
        try harness.reply(#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Batch too large","data":{"limit":1}},"id":null}"#)
        XCTAssertEqual(clientError(batch), .remote(RPCError(code: -32001, message: "Batch too large", data: ["limit": 1])))
        XCTAssertEqual(harness.handler.pendingCount, 0)
    }

    func testNullIDErrorIsDroppedWhenItsCallIsAmbiguous() throws {
        let harness = try HandlerHarness()
        let first = try harness.call("a.b", id: 1)
        let second = try harness.call("a.c", id: 2)
        try harness.reply(#"{"jsonrpc":"2.0","error":{"code":-32002,"message":"Nesting too deep"},"id":null}"#)
        XCTAssertNil(outcome(first))
        XCTAssertNil(outcome(second))
        try harness.reply(#"{"jsonrpc":"2.0","result":1,"id":1}"#)
        XCTAssertEqual(value(first), 1)
    }

    func testConnectionCloseFailsPendingCallsAndLaterCalls() throws {
        let harness = try HandlerHarness()
        let call = try harness.call("echo.sleep", params: [1000], id: 1)
        let batch = try harness.batch([(method: "a.b", params: nil)], ids: [2])
        let raw = try harness.raw("{}")
        _ = try harness.channel.finish()
        XCTAssertEqual(clientError(call), .connectionClosed)
        XCTAssertEqual(clientError(batch), .connectionClosed)
        XCTAssertEqual(try XCTUnwrap(value(raw)), nil, "sendRaw answers nil when the server closes first")
    }

    func testCallOnClosedHandlerFailsAtOnce() throws {
        let handler = RPCClientHandler()
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.pipeline.fireChannelInactive()
        let promise = channel.eventLoop.makePromise(of: JSONValue.self)
        let payload = ByteBuffer(string: "{}")
        channel.write(RPCClientCommand.call(id: 1, payload: payload, promise: promise, timeout: nil), promise: nil)
        channel.flush()
        XCTAssertEqual(clientError(promise.futureResult), .connectionClosed)
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self), "nothing is sent on a closed connection")
    }

    func testReplyWithoutResultOrErrorIsAProtocolViolation() throws {
        let harness = try HandlerHarness()
        let call = try harness.call("a.b", id: 1)
        try harness.reply(#"{"jsonrpc":"2.0","id":1}"#)
        guard case .protocolViolation(let detail)? = clientError(call) else {
            return XCTFail("expected protocolViolation, got \(String(describing: outcome(call)))")
        }
        XCTAssertTrue(detail.contains("neither"), detail)
    }

    func testMalformedErrorObjectAndWrongVersionAreProtocolViolations() throws {
        let harness = try HandlerHarness()
        let badError = try harness.call("a.b", id: 1)
        let badVersion = try harness.call("a.b", id: 2)
        let both = try harness.call("a.b", id: 3)
        try harness.reply(#"{"jsonrpc":"2.0","error":{"message":"no code"},"id":1}"#)
        try harness.reply(#"{"jsonrpc":"1.0","result":1,"id":2}"#)
        try harness.reply(#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"x"},"id":3}"#)
        for future in [badError, badVersion, both] {
            guard case .protocolViolation? = clientError(future) else {
                return XCTFail("expected protocolViolation, got \(String(describing: outcome(future)))")
            }
        }
    }

    func testFrameThatIsNotJSONFailsEveryPendingCall() throws {
        let harness = try HandlerHarness()
        let first = try harness.call("a.b", id: 1)
        let second = try harness.call("a.c", id: 2)
        try harness.reply("this is not json")
        for future in [first, second] {
            guard case .protocolViolation(let detail)? = clientError(future) else {
                return XCTFail("expected protocolViolation, got \(String(describing: outcome(future)))")
            }
            XCTAssertTrue(detail.contains("not valid JSON"), detail)
        }
        XCTAssertEqual(harness.handler.pendingCount, 0)
    }

    func testTimeoutFailsTheCallAndALateReplyIsDropped() throws {
        let harness = try HandlerHarness()
        let slow = try harness.call("echo.sleep", id: 1, timeout: .milliseconds(100))
        let patient = try harness.call("echo.sleep", id: 2)
        harness.loop.advanceTime(by: .milliseconds(99))
        XCTAssertNil(outcome(slow))
        harness.loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(clientError(slow), .timedOut)
        try harness.reply(#"{"jsonrpc":"2.0","result":"late","id":1}"#)
        XCTAssertNil(outcome(patient), "a late reply must not complete another call")
        try harness.reply(#"{"jsonrpc":"2.0","result":"done","id":2}"#)
        XCTAssertEqual(value(patient), "done")
    }

    /// A call given up on tells the server: its timeout, or its task's cancellation, sends rpc.cancel for its id
    /// (for each id of a batch); a call answered in time sends nothing more.
    func testGivingUpSendsRPCCancel() throws {
        let harness = try HandlerHarness()
        let slow = try harness.call("echo.sleep", id: 1, timeout: .milliseconds(100))
        let cancelled = try harness.call("echo.sleep", id: 2)
        let batch = try harness.batch([(method: "a.b", params: nil), (method: "a.c", params: nil)], ids: [3, 4])
        for _ in 0..<3 { _ = try harness.sent() }
        harness.loop.advanceTime(by: .milliseconds(100))
        XCTAssertEqual(clientError(slow), .timedOut)
        XCTAssertEqual(try harness.sent(), #"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":1}}"#)
        try harness.cancel(key: 2)
        XCTAssertEqual(clientError(cancelled), .cancelled)
        XCTAssertEqual(try harness.sent(), #"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":2}}"#)
        try harness.cancel(key: 3)
        XCTAssertEqual(clientError(batch), .cancelled)
        XCTAssertEqual(try harness.sent(), #"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":3}}"#)
        XCTAssertEqual(try harness.sent(), #"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":4}}"#)
        try harness.cancel(key: 2)
        XCTAssertNil(try harness.sent(), "a call already given up on is not cancelled twice")
        XCTAssertEqual(harness.handler.pendingCount, 0)
    }

    func testAnsweredCallCancelsItsTimeout() throws {
        let harness = try HandlerHarness()
        let call = try harness.call("a.b", id: 1, timeout: .milliseconds(10))
        try harness.reply(#"{"jsonrpc":"2.0","result":1,"id":1}"#)
        harness.loop.advanceTime(by: .seconds(1))
        XCTAssertEqual(value(call), 1)
    }

    func testSendRawGetsTheNextUnmatchedFrame() throws {
        let harness = try HandlerHarness()
        let pending = try harness.call("a.b", id: 1)
        let raw = try harness.raw("{not json")
        XCTAssertEqual(try harness.sent(), #"{"jsonrpc":"2.0","method":"a.b","id":1}"#)
        XCTAssertEqual(try harness.sent(), "{not json")
        try harness.reply(#"{"jsonrpc":"2.0","result":1,"id":1}"#)
        XCTAssertNil(outcome(raw), "a reply to a pending call is not the raw reply")
        try harness.reply(#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#)
        XCTAssertEqual(value(pending), 1)
        let reply = try XCTUnwrap(value(raw) ?? nil)
        XCTAssertEqual(reply["error"]?["code"], -32700)
    }

    func testSendRawWithoutReplyCompletesWhenWritten() throws {
        let harness = try HandlerHarness()
        let raw = try harness.raw(#"{"jsonrpc":"2.0","method":"a.b"}"#, expectReply: false)
        XCTAssertEqual(try XCTUnwrap(value(raw)), nil)
    }

    func testSendRawTimesOut() throws {
        let harness = try HandlerHarness()
        let raw = try harness.raw("[]", timeout: .seconds(2))
        harness.loop.advanceTime(by: .seconds(2))
        XCTAssertEqual(clientError(raw), .timedOut)
    }

    func testFullPipelineFramesRequestsAndReassemblesReplies() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(RPCClient.channelHandlers(maxFrameSize: 1 << 20))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let promise = channel.eventLoop.makePromise(of: JSONValue.self)
        let payload = #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#
        try channel.writeOutbound(
            RPCClientCommand.call(id: 1, payload: ByteBuffer(string: payload), promise: promise, timeout: nil))
        var wire = ByteBuffer()
        while let part = try channel.readOutbound(as: ByteBuffer.self) { wire.writeImmutableBuffer(part) }
        XCTAssertEqual(wire.readInteger(endianness: .big, as: UInt32.self), UInt32(payload.utf8.count))
        XCTAssertEqual(String(buffer: wire), payload)

        let reply = #"{"jsonrpc":"2.0","result":"pong","id":1}"#
        var frame = ByteBuffer()
        frame.writeInteger(UInt32(reply.utf8.count), endianness: .big)
        frame.writeString(reply)
        try channel.writeInbound(frame.getSlice(at: 0, length: 3)!)
        XCTAssertNil(outcome(promise.futureResult))
        try channel.writeInbound(frame.getSlice(at: 3, length: frame.readableBytes - 3)!)
        XCTAssertEqual(value(promise.futureResult), "pong")
    }
}

final class RPCClientHandlerTLSHintTests: XCTestCase {
    /// A TLS listener answers a plain client with an alert, whose record header reads as a huge frame length.
    func testATLSAlertReadAsAFrameLengthSaysToUseTLS() throws {
        let harness = try HandlerHarness()
        let call = try harness.call("rpcd.ping", id: 1)
        harness.channel.pipeline.fireErrorCaught(FrameTooLargeError(announcedLength: 0x1503_0300, maxFrameSize: 4 << 20))
        guard case .failure(RPCClientError.protocolViolation(let message))? = outcome(call) else {
            return XCTFail("expected a protocol violation, got \(String(describing: outcome(call)))")
        }
        XCTAssertEqual(message, "the server answered in TLS: connect with a tls:// address or --tls")
    }
}
