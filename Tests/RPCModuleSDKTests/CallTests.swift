import CRPCDModule
import Foundation
import RPCJSON
import RPCModuleSDK
import XCTest

/// Calls through the C `call` function pointer with a real host table: binding, errors, replies.
final class CallTests: XCTestCase {
    let subject = ModuleUnderTest(RPCModuleExport.entry(TestModule.self))
    var instance: Instance!

    override func setUpWithError() throws {
        instance = try subject.start()
    }

    override func tearDown() {
        instance?.deinitialize()
    }

    // MARK: Cancellation

    /// rpcd calls the module's cancel() when the caller gives up: the async body's task is cancelled, so a
    /// sleep ends at once, and the error it ends with is not logged as an internal error.
    func testCancelCancelsTheTaskOfAnAsyncBody() async throws {
        let call = instance.send("sleep", "[60000]")
        let cancel = try XCTUnwrap(subject.module.cancel, "the SDK fills rpcd_module.cancel")
        cancel(instance.instance, call)
        let reply = try await TestHost.shared.waitForReply(call, timeout: .seconds(10))
        XCTAssertNotNil(reply.errorCode, "the body ended early, by throwing")
        XCTAssertTrue(instance.logs.contains { $0.message == "Sleep cancelled" }, "the body saw the cancellation")
        XCTAssertFalse(instance.logs.contains { $0.message.contains("internal error") })
    }

    /// A cancel for a call that is not running (answered already, or a synchronous body) changes nothing.
    func testCancelOfAFinishedCallIsHarmless() async throws {
        let call = instance.send("list")
        _ = try await TestHost.shared.waitForReply(call)
        subject.module.cancel?(instance.instance, call)
        try await instance.expectResult("list", nil, ["a", "b"])
    }

    // MARK: Binding

    func testByPosition() async throws {
        try await instance.expectResult("add", "[1, 2.5]", 3.5)
    }

    func testByName() async throws {
        try await instance.expectResult("add", #"{"b": 2.5, "a": 1}"#, 3.5)
    }

    func testOptionalParameterMayBeLeftOutOrNull() async throws {
        try await instance.expect("greet", #"["ann"]"#, .result(#""hello ann""#))
        try await instance.expect("greet", #"["ann", 2]"#, .result(#""hello ann, hello ann""#))
        try await instance.expect("greet", #"["ann", null]"#, .result(#""hello ann""#))
        try await instance.expect("greet", #"{"name": "bo", "times": null}"#, .result(#""hello bo""#))
        try await instance.expectResult("greet", #"{"times": 3, "name": "bo"}"#, "hello bo, hello bo, hello bo")
    }

    func testTooManyPositionalParams() async throws {
        try await instance.expectInvalidParams("add", "[1, 2, 3]", "too many parameters: expected at most 2, got 3")
    }

    func testMissingParams() async throws {
        try await instance.expectInvalidParams("add", "[1]", "missing parameter 'b'")
        try await instance.expectInvalidParams("add", #"{"b": 1}"#, "missing parameter 'a'")
        try await instance.expectInvalidParams("add", nil, "missing parameter 'a'")
        try await instance.expectInvalidParams("add", "[1, null]", "parameter 'b': expected a number, got null")
    }

    func testWrongTypes() async throws {
        try await instance.expectInvalidParams("add", #"["1", 2]"#, "parameter 'a': expected a number, got a string")
        try await instance.expectInvalidParams("greet", #"["x", 1.5]"#, "parameter 'times': expected an integer, got a number")
        try await instance.expectInvalidParams("add", "3", "params must be an array or an object, not a number")
    }

    func testUnknownName() async throws {
        try await instance.expectInvalidParams("add", #"{"a": 1, "b": 2, "c": 3}"#, "unknown parameter 'c'")
    }

    func testSchemaBounds() async throws {
        try await instance.expectInvalidParams("greet", #"["x", 4]"#, "parameter 'times': must be at most 3")
        try await instance.expectInvalidParams("greet", #"["x", 0]"#, "parameter 'times': must be at least 1")
        try await instance.expectResult("greet", #"["x", 3.0]"#, "hello x, hello x, hello x")
    }

    func testDecodingErrorsNameTheNestedField() async throws {
        try await instance.expectResult("point", #"[{"x": 1, "y": 2}]"#, 3)
        try await instance.expectInvalidParams("point", #"[{"x": 1}]"#, "parameter 'point': missing member 'y'")
        try await instance.expectInvalidParams(
            "point", #"{"point": {"x": 1, "y": "2"}}"#, "parameter 'point.y': expected an integer, got a string")
        try await instance.expectInvalidParams(
            "point", #"{"point": {"x": 1, "y": 2.5}}"#, "parameter 'point.y': 2.5 is not an integer.")
        try await instance.expectInvalidParams("point", "[[1]]", "parameter 'point': expected an object, got an array")
    }

    func testMethodWithoutParams() async throws {
        try await instance.expectResult("list", nil, ["a", "b"])
        try await instance.expectResult("list", "[]", ["a", "b"])
        try await instance.expectResult("list", "{}", ["a", "b"])
        try await instance.expectInvalidParams("list", "[1]", "this method takes no parameters")
        try await instance.expectInvalidParams("list", #"{"x": 1}"#, "unknown parameter 'x'")
    }

    func testJSONValueParamsAndRawParamsAreExact() async throws {
        let big = "123456789012345678901234567890.10"
        try await instance.expect("exact", "[\(big)]", .result(big))
        try await instance.expect("exact", #"{"value": {"k": [1.0, null]}}"#, .result(#"{"k":[1.0,null]}"#))
        try await instance.expect("echo", #"[1e2, "\u00e9"]"#, .result(#"[1e2,"é"]"#))
        try await instance.expect("echo", #"{"z": 1, "a": 2}"#, .result(#"{"a":2,"z":1}"#))
        try await instance.expect("echo", nil, .result("null"))
    }

    func testInvalidJSONIsInvalidParams() async throws {
        // The host validates JSON; the SDK still answers sensibly if it ever gets garbage.
        let reply = try await instance.call("echo", "[1,")
        XCTAssertEqual(reply.errorCode, -32602)
        XCTAssertEqual(reply.detail?.hasPrefix("params are not valid JSON: "), true, "\(reply)")
    }

    // MARK: Errors

    func testModuleErrorKeepsCodeMessageAndData() async throws {
        try await instance.expect("fail", "[7]", .error(code: 7, message: "Failed on purpose", data: #"{"code":7}"#))
        try await instance.expect(
            "fail", "[-32000]", .error(code: -32000, message: "Failed on purpose", data: #"{"code":-32000}"#))
        XCTAssertTrue(instance.logs.filter { $0.priority == 3 }.isEmpty, "module errors are not logged")
    }

    /// Results JSON cannot carry are internal errors with their cause logged, raw or typed; never a trap.
    func testNonFiniteResultsAreInternalErrors() async throws {
        try await instance.expect("product", "[1e308, 10]", .error(code: -32603, message: "Internal error", data: nil))
        try await instance.expect("square", "[1e200]", .error(code: -32603, message: "Internal error", data: nil))
        try await instance.expectResult("product", "[2, 3]", 6)
        XCTAssertEqual(instance.logs.filter { $0.priority == 3 }.count, 2)
    }

    func testOtherErrorsAreInternalAndLogged() async throws {
        try await instance.expect("crash", nil, .error(code: -32603, message: "Internal error", data: nil))
        let errors = instance.logs.filter { $0.priority == 3 }
        XCTAssertEqual(errors.count, 1)
        XCTAssertEqual(errors.first?.message, "Method failed with an internal error")
        XCTAssertEqual(errors.first?.fields, ["METHOD": "crash", "RPCD_ERROR": "disk on fire"])
    }

    // MARK: Replies

    func testEveryCallIsAnsweredExactlyOnce() async throws {
        let requests: [(String, String?)] = [
            ("add", "[1, 2]"), ("add", "[1]"), ("fail", "[3]"), ("crash", nil), ("echo", "[true]"), ("list", nil),
            ("sleep", "[5]"), ("greet", #"["x", 9]"#), ("thread", nil),
        ]
        var calls: [OpaquePointer] = []
        for round in 0..<40 {
            for (method, params) in requests where !(method == "sleep" && round % 4 != 0) {
                calls.append(instance.send(method, params))
            }
        }
        for call in calls { _ = try await TestHost.shared.waitForReply(call) }
        // A second answer would come late, and its absence is no event: give it time to arrive.
        try await Task.sleep(for: .milliseconds(100))
        for call in calls {
            XCTAssertEqual(TestHost.shared.replies(call).count, 1)
        }
    }

    func testMayBlockRunsOnTheCallingThreadAndAnswersBeforeReturning() async throws {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<(UInt64, [Reply]), Never>) in
            let instance = UncheckedBox(self.instance!)
            let thread = Thread {
                let instance = instance.value
                let call = instance.send("thread")
                continuation.resume(returning: (currentThreadID(), TestHost.shared.replies(call)))
            }
            thread.start()
        }
        XCTAssertEqual(outcome.1, [.result(String(outcome.0))])
    }

    func testOrdinaryCallsReturnBeforeAnswering() async throws {
        let call = instance.send("sleep", "[200]")
        XCTAssertEqual(TestHost.shared.replies(call), [], "call() must not wait for the body")
        let reply = try await TestHost.shared.waitForReply(call)
        XCTAssertEqual(reply, .result(#""done""#))
    }
}

/// Hands a non-Sendable test value to another thread; the tests make sure the use does not overlap.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
