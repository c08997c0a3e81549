import CRPCDModule
import RPCJSON
import RPCModuleSDK
import RPCTestSupport
import XCTest

/// init, deinit, configuration and logging through the host table.
final class LifecycleTests: XCTestCase {
    let subject = ModuleUnderTest(RPCModuleExport.entry(TestModule.self))

    func testConfigValuesComeFromTheHost() async throws {
        let instance = try subject.start(config: ["Greeting": "hi", "Extra": "x y z"])
        defer { instance.deinitialize() }
        try await instance.expect("greet", #"["ann"]"#, .result(#""hi ann""#))
        try await instance.expect("config", #"["Extra"]"#, .result(#""x y z""#))
        try await instance.expect("config", #"["Missing"]"#, .result("null"))
        XCTAssertEqual(
            TestHost.shared.configReads(instance.handler), ["FailWith", "FailPlain", "Greeting", "Extra", "Missing"])
    }

    func testInitLogsThroughTheHostWithNormalizedFields() throws {
        let instance = try subject.start(config: ["Greeting": "hey"])
        defer { instance.deinitialize() }
        XCTAssertEqual(
            instance.logs,
            [LogEntry(priority: 6, message: "Test module ready", fields: ["GREETING": "hey", "WEIRD_NAME": "x", "LEAD": "y"])])
    }

    func testInitFailureReportsTheErrorsDescription() {
        guard case .failure(let failure) = subject.initialize(config: ["FailWith": "the store is corrupt"]) else {
            return XCTFail("init succeeded")
        }
        XCTAssertNotEqual(failure.status, 0)
        XCTAssertEqual(failure.reason, "the store is corrupt")

        guard case .failure(let plain) = subject.initialize(config: ["FailPlain": "no such device"]) else {
            return XCTFail("init succeeded")
        }
        XCTAssertEqual(plain.reason, "no such device")
    }

    func testInitFailureReasonIsTruncatedToTheBufferAtACharacterBoundary() {
        // "ab" + "é" (2 bytes): with room for 3 bytes plus NUL, the 'é' must not be cut in half.
        guard case .failure(let failure) = subject.initialize(config: ["FailWith": "abéé"], reasonSize: 4) else {
            return XCTFail("init succeeded")
        }
        XCTAssertEqual(failure.reason, "ab")
        guard case .failure(let exact) = subject.initialize(config: ["FailWith": "abé"], reasonSize: 5) else {
            return XCTFail("init succeeded")
        }
        XCTAssertEqual(exact.reason, "abé")
    }

    func testInitRefusesAnIncompatibleHostTable() {
        let newer = TestHost.shared.modifiedTable { $0.abi_version = 2 }
        guard case .failure(let failure) = subject.initialize(host: newer) else { return XCTFail("init succeeded") }
        XCTAssertEqual(failure.reason, "host ABI version 2, this module needs 1")

        let truncated = TestHost.shared.modifiedTable { $0.struct_size = 16 }
        guard case .failure(let small) = subject.initialize(host: truncated) else { return XCTFail("init succeeded") }
        XCTAssertEqual(small.reason, "host table has 16 bytes, this module needs at least 40")

        // An rpcd older than 0.3 hands a table that ends after config_get: the module still runs there.
        let older = TestHost.shared.modifiedTable { $0.struct_size = 40 }
        guard case .success = subject.initialize(host: older) else { return XCTFail("an ABI 1 host of 0.2 was refused") }

        let incomplete = TestHost.shared.modifiedTable { $0.log = nil }
        guard case .failure(let missing) = subject.initialize(host: incomplete) else { return XCTFail("init succeeded") }
        XCTAssertEqual(missing.reason, "the host table lacks a function")
    }

    func testInstancesAreIndependent() async throws {
        let first = try subject.start(config: ["Greeting": "one"])
        let second = try subject.start(config: ["Greeting": "two"])
        defer {
            first.deinitialize()
            second.deinitialize()
        }
        XCTAssertNotEqual(first.instance, second.instance)
        try await first.expect("greet", #"["x"]"#, .result(#""one x""#))
        try await second.expect("greet", #"["x"]"#, .result(#""two x""#))
    }

    func testDeinitInsideTheLastReplyIsSafe() async throws {
        for method in ["greet", "thread"] {  // answered from a Swift task, and from the calling thread
            let instance = try subject.start()
            let call = TestHost.shared.makeCall()
            let box = UncheckedBox(instance)
            let deinitReturned = LockedLog()
            TestHost.shared.onReply(call) {
                box.value.deinitialize()
                deinitReturned.append(method)
            }
            instance.send(method, method == "greet" ? #"["x"]"# : nil, call: call)
            _ = try await TestHost.shared.waitForReply(call)
            try await waitUntil("deinit to return") { !deinitReturned.entries.isEmpty }
            XCTAssertEqual(deinitReturned.entries, [method], "deinit inside the reply must not deadlock")
            XCTAssertEqual(TestHost.shared.replies(call).count, 1)
        }
    }

    func testDeinitCancelsCallsStillRunningAndStopsLogging() async throws {
        let instance = try subject.start()
        // The body starts on this thread (`Task.immediate`): send returns with it asleep.
        let call = instance.send("sleep", "[30000]")
        let logsBefore = instance.logs
        let started = ContinuousClock.now
        instance.deinitialize()
        // The host would drop this late answer (the call timed out); what matters is that it comes at once,
        // exactly once, and that nothing was logged through the handler after deinit.
        let reply = try await TestHost.shared.waitForReply(call, timeout: .seconds(5))
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5))
        XCTAssertEqual(reply.errorCode, -32603)
        // A second answer or a late log line would come after this one, and their absence is no event.
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertEqual(TestHost.shared.replies(call).count, 1)
        XCTAssertEqual(instance.logs, logsBefore, "no logging after deinit")
    }
}

/// The pieces usable without the C ABI.
final class InProcessTests: XCTestCase {
    func testMethodsCanBeCalledInProcess() async throws {
        let logged = LockedLog()
        let context = RPCModuleContext(config: ["Greeting": "yo"]) { level, message, fields in
            logged.append("\(level) \(message) \(fields.sorted { $0.key < $1.key })")
        }
        let module = try TestModule(context: context)
        let greet = try XCTUnwrap(TestModule.methods.first { $0.name == "greet" })
        let fail = try XCTUnwrap(TestModule.methods.first { $0.name == "fail" })
        let crash = try XCTUnwrap(TestModule.methods.first { $0.name == "crash" })
        let reply = await greet.call(module, params: ["z", 2])
        XCTAssertEqual(reply, .result("yo z, yo z"))
        let failed = await fail.call(module, params: ["code": 5])
        XCTAssertEqual(failed, .error(RPCError(code: 5, message: "Failed on purpose", data: ["code": 5])))
        let crashed = await crash.call(module)
        XCTAssertEqual(crashed, .error(.internalError))
        let bad = await greet.call(module, params: [1])
        XCTAssertEqual(bad, .error(.invalidParams("parameter 'name': expected a string, got a number")))
        XCTAssertEqual(
            logged.entries, [#"info Test module ready [(key: "GREETING", value: "yo"), (key: "LEAD", value: "y"), (key: "WEIRD_NAME", value: "x")]"#])
    }

    func testFieldNames() {
        XCTAssertEqual(RPCModuleLogger.fieldName("path"), "PATH")
        XCTAssertEqual(RPCModuleLogger.fieldName("key-count"), "KEY_COUNT")
        XCTAssertEqual(RPCModuleLogger.fieldName("__x"), "X")
        XCTAssertEqual(RPCModuleLogger.fieldName("2fa"), "FIELD_2FA")
        XCTAssertEqual(RPCModuleLogger.fieldName(""), "FIELD_")
        XCTAssertEqual(RPCModuleLogger.fieldName("RPCD_ERROR"), "RPCD_ERROR")
    }

    func testInvalidParamsShape() {
        XCTAssertEqual(
            RPCError.invalidParams("why"), RPCError(code: -32602, message: "Invalid params", data: ["detail": "why"]))
        XCTAssertEqual(RPCError(code: 1, message: "No such key", data: ["key": "k"]).description, #"No such key (1): {"key":"k"}"#)
    }
}

final class LockedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ entry: String) {
        lock.withLock { stored.append(entry) }
    }
    var entries: [String] { lock.withLock { stored } }
}
