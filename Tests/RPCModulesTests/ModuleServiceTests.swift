import Foundation
import JSONRPC
import Logging
import NIOCore
import NIOPosix
import RPCConfig
import RPCCore
import RPCJSON
import RPCServer
import RPCTestSupport
import RPCLogging
@testable import RPCModuleHost
@testable import RPCModules
import Synchronization
import XCTest

/// Calls through the real router into a real C module on a real event loop.
final class ModuleServiceTests: XCTestCase {
    private var directory: URL!
    private var group: MultiThreadedEventLoopGroup!
    private var pool: WorkerPool!
    private var image: ModuleImage!

    override func setUpWithError() throws {
        directory = TestModule.temporaryDirectory()
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        pool = WorkerPool(threads: 2)
        image = try ModuleLoader().load(path: TestModule.build(into: directory))
    }

    override func tearDownWithError() throws {
        try pool.syncShutdownGracefully()
        try group.syncShutdownGracefully()
        try? FileManager.default.removeItem(at: directory)
    }

    private func service(_ configure: (inout HandlerConfiguration) -> Void = { _ in }) throws -> ModuleService {
        var configuration = HandlerConfiguration(name: "test")
        configuration.module = image.path
        configure(&configuration)
        return try ModuleService(image: image, configuration: configuration, pool: pool, logger: Logger(label: "test"))
    }

    /// Sends `payload` through a router serving `service`; returns the reply text.
    private func call(_ service: any RPCService, _ payload: String) throws -> String? {
        let router = RPCRouter(registry: try RPCServiceRegistry(services: [service]), parser: RPCEnvelopeParser())
        let loop = group.next()
        let reply = loop.makePromise(of: String?.self)
        loop.execute {
            router.dispatch(router.parser.parse(ByteBuffer(string: payload)),
                            connection: RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "test")),
                            eventLoop: loop) { reply.succeed($0.map { String(buffer: $0) }) }
        }
        return try reply.futureResult.wait()
    }

    /// Waits (at most about 10 s) until the module has answered every call it was given, late answers included.
    private func waitUntilTheModuleAnswered(_ service: ModuleService, file: StaticString = #filePath, line: UInt = #line) throws {
        try blockingWaitUntil("the module to answer every call it holds", file: file, line: line) { service.instance.callsInModule == 0 }
    }

    private func request(_ method: String, _ params: String? = nil, id: Int = 1) -> String {
        #"{"jsonrpc":"2.0","method":"testmod.\#(method)""# + (params.map { #","params":\#($0)"# } ?? "") + #","id":\#(id)}"#
    }

    func testResultsErrorsAndParamsCrossTheABI() throws {
        let service = try service()
        XCTAssertEqual(try call(service, request("ok")), #"{"jsonrpc":"2.0","result":42,"id":1}"#)
        XCTAssertEqual(try call(service, request("fail")),
                       #"{"jsonrpc":"2.0","error":{"code":7,"message":"Seven","data":{"x":1}},"id":1}"#)
        XCTAssertEqual(try call(service, request("echo", #"{"value":[1,"two"]}"#)),
                       #"{"jsonrpc":"2.0","result":{"value":[1,"two"]},"id":1}"#)
        XCTAssertEqual(try call(service, request("echo")), #"{"jsonrpc":"2.0","result":null,"id":1}"#)
    }

    /// RPCD_METHOD_BIND_PARAMS: rpcd binds by name or by position, the module gets one array element per declared
    /// parameter (null for an absent one) and reads each by position through host->param and the header's readers.
    func testBoundParamsReachTheModuleByDeclaredPosition() throws {
        let service = try service()
        func result(_ params: String?) throws -> JSONValue? {
            let reply = try XCTUnwrap(try call(service, request("bound", params)))
            return try JSONValue(parsing: reply)["result"]
        }
        // By name, out of order; the string unescaped into an 8-byte buffer: cut short, its full length returned.
        let named = try result(#"{"loud":true,"count":3,"label":"h\u00e9\n\ud83d\ude00"}"#)
        XCTAssertEqual(named?["params"], [3, "h\u{e9}\n\u{1F600}", true])
        XCTAssertEqual(named?["count"], 3)
        XCTAssertEqual(named?["length"], 8)
        XCTAssertEqual(named?["label"], [104, 195, 169, 10, 240, 159, 152])
        XCTAssertEqual(named?["loud"], 1)
        XCTAssertEqual(named?["loud_absent"], 0)
        // By position, an optional one null and one left out: absent, and host->param says so.
        let positional = try result("[2e1, null]")
        XCTAssertEqual(positional?["params"], [.number("2e1"), .null, .null])
        XCTAssertEqual(positional?["count"], 20)
        XCTAssertEqual(positional?["length"], -1)
        XCTAssertEqual(positional?["loud"], -1)
        XCTAssertEqual(positional?["loud_absent"], 1)
    }

    /// Wrong params for a binding method are answered -32602 by rpcd, with the binder's detail; the module never
    /// sees the call.
    func testWrongBoundParamsAreRefusedByRPCD() throws {
        let service = try service()
        for (params, detail) in [
            (nil, "missing parameter 'count'"),
            (#"[-1]"#, "parameter 'count': must be at least 0"),
            (#"[1.5]"#, "parameter 'count': expected an integer, got a number"),
            (#"{"count":1,"colour":"red"}"#, "unknown parameter 'colour'"),
            (#"[1,"a",true,4]"#, "too many parameters: expected at most 3, got 4"),
            (#"[1,2]"#, "parameter 'label': expected a string, got a number"),
        ] {
            XCTAssertEqual(
                try call(service, request("bound", params)),
                #"{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":{"detail":"\#(detail)"}},"id":1}"#,
                "params \(params ?? "absent")")
        }
        XCTAssertEqual(service.instance.callsInModule, 0)
    }

    /// A module that declares its `[Config]` keys refuses a handler with another one before its init runs, with
    /// the file, line and "did you mean" an unknown `[Handler]` key gets; one that declares none gets any key.
    func testConfigKeysAreCheckedAgainstTheModulesDeclarationBeforeInit() throws {
        let declaring = try ModuleLoader().load(
            path: TestModule.build(into: directory, name: "declaring", defines: ["CONFIG_KEYS"]))
        XCTAssertEqual(declaring.configKeys, ["Greeting", "FailInit"])
        XCTAssertNil(image.configKeys)
        let inits = try XCTUnwrap(dlsym(declaring.handle, "test_init_count")).assumingMemoryBound(to: Int32.self)
        var configuration = HandlerConfiguration(name: "greeter")
        configuration.module = declaring.path
        configuration.configEntries = [
            INIEntry(section: "Config", key: "Greeting", value: "hi", file: "/etc/rpcd/handlers.d/greeter.conf", line: 4),
            INIEntry(section: "Config", key: "X-Comment", value: "ignored", file: "/etc/rpcd/handlers.d/greeter.conf", line: 5),
            INIEntry(section: "Config", key: "Greetin", value: "hi", file: "/etc/rpcd/handlers.d/greeter.conf", line: 6),
        ]
        XCTAssertThrowsError(try ModuleService(image: declaring, configuration: configuration, pool: pool, logger: Logger(label: "test"))) {
            XCTAssertEqual(
                "\($0)",
                "module \(declaring.path) refused: handler 'greeter': /etc/rpcd/handlers.d/greeter.conf:6: unknown key 'Greetin' in section [Config]; did you mean 'Greeting'?")
        }
        XCTAssertEqual(inits.pointee, 0, "the module's init ran")
        configuration.configEntries.removeLast()
        let service = try ModuleService(image: declaring, configuration: configuration, pool: pool, logger: Logger(label: "test"))
        XCTAssertEqual(inits.pointee, 1)
        service.retire()
        // The module without config_keys takes any key.
        _ = try self.service { $0.configEntries = configuration.configEntries + [INIEntry(section: "Config", key: "Anything", value: "1", file: "f", line: 1)] }.retire()
    }

    /// Of two handlers for one service, the second is refused before its module's init runs, in-process and
    /// isolated (the first in name order serves). Its init would fail (FailInit=): the refusal it gets shows
    /// init never ran.
    func testASecondHandlerForAServiceIsRefusedBeforeItsInit() throws {
        let modules = directory.appendingPathComponent("modules")
        _ = try TestModule.build(into: modules, name: "twice")
        let handlers = directory.appendingPathComponent("handlers.d")
        try FileManager.default.createDirectory(at: handlers, withIntermediateDirectories: true)
        try "[Handler]\nModule=twice\nIsolation=none\n".write(
            to: handlers.appendingPathComponent("a.conf"), atomically: true, encoding: .utf8)
        try "[Handler]\nModule=twice\nIsolation=none\n[Config]\nFailInit=yes\n".write(
            to: handlers.appendingPathComponent("b.conf"), atomically: true, encoding: .utf8)
        let handlerSet = HandlerSet(
            directories: HandlerDirectories(directories: [handlers.path]), moduleDirectories: ModuleDirectories([modules.path]),
            reservedServices: [], pool: pool, logger: Logger(label: "test"))
        let generation = try handlerSet.prepare(strict: false)
        XCTAssertEqual(generation.services.map(\.configuration.name), ["a"])
        XCTAssertEqual(generation.problems.count, 1)
        let problem = generation.problems.first ?? ""
        XCTAssertTrue(problem.contains("handler 'b' would serve the same service as handler 'a'"), problem)
        XCTAssertFalse(problem.contains("asked to fail"), problem)
        handlerSet.commit(generation)
        handlerSet.retireAll()
        // Isolated (the default): no module host is started for the second, so its init never runs.
        try "[Handler]\nModule=twice\n[Config]\nFailInit=yes\n".write(
            to: handlers.appendingPathComponent("b.conf"), atomically: true, encoding: .utf8)
        let again = try handlerSet.prepare(strict: false)
        XCTAssertEqual(again.services.map(\.configuration.name), ["a"])
        XCTAssertTrue(again.problems.first?.contains("handler 'b' would serve the same service as handler 'a'") ?? false, "\(again.problems)")
        handlerSet.commit(again)
        handlerSet.retireAll()
    }

    /// A method without RPCD_METHOD_MAY_BLOCK that holds its event loop is reported once, naming the method and
    /// the flag it lacks; a blocking method with the flag (on the pool) is not.
    func testAMethodBlockingItsLoopWithoutTheFlagIsReportedOnce() throws {
        let capture = LogCapture()
        var configuration = HandlerConfiguration(name: "test")
        configuration.module = image.path
        let service = try ModuleService(
            image: image, configuration: configuration, pool: pool, logger: Logger(label: "test") { _ in capture.handler() })
        for id in 1...2 {
            XCTAssertEqual(try call(service, request("stall", id: id)), #"{"jsonrpc":"2.0","result":"stalled","id":\#(id)}"#)
        }
        XCTAssertEqual(try call(service, request("block")), #"{"jsonrpc":"2.0","result":"slept","id":1}"#)
        let reports = capture.entries.filter { $0.message.contains("blocked its event loop") }
        XCTAssertEqual(reports.count, 1, "\(capture.entries)")
        XCTAssertEqual(reports.first?.level, .warning)
        XCTAssertEqual(reports.first?.metadata[LogField.method], "testmod.stall")
        XCTAssertTrue(reports.first?.message.contains("lacks RPCD_METHOD_MAY_BLOCK") ?? false)
        XCTAssertGreaterThanOrEqual(Int(reports.first?.metadata[LogField.durationMicroseconds] ?? "") ?? 0, 30_000)
    }

    /// A method without the flag (every module built before rpcd 0.5) gets its params exactly as sent.
    func testMethodsWithoutTheFlagGetParamsAsSent() throws {
        let service = try service()
        XCTAssertEqual(try call(service, request("echo", #"{"value":1, "extra":[2]}"#)),
                       #"{"jsonrpc":"2.0","result":{"value":1, "extra":[2]},"id":1}"#)
    }

    /// The handler handle lives from init to deinit; afterwards it names nothing, so a module thread that logs
    /// late reaches no freed memory (issue 14, the handler pointer's lifetime).
    func testTheHandlerHandleEndsWithDeinit() throws {
        let service = try service()
        XCTAssertNotNil(HandlerContext.of(OpaquePointer(bitPattern: service.instance.handlerToken)))
        service.retire()
        XCTAssertTrue(service.instance.isDeinitialized)
        XCTAssertNil(HandlerContext.of(OpaquePointer(bitPattern: service.instance.handlerToken)))
        // What a late log line from the module does: nothing.
        HostFunctions.table.pointee.log(OpaquePointer(bitPattern: service.instance.handlerToken), 6, "late", nil, 0)
        XCTAssertNil(HostFunctions.table.pointee.config_get(OpaquePointer(bitPattern: service.instance.handlerToken), "Greeting"))
    }

    func testConfigValuesReachTheModule() throws {
        let service = try service { $0.config = ["Greeting": "hello from [Config]"] }
        XCTAssertEqual(try call(service, request("greeting")), #"{"jsonrpc":"2.0","result":"hello from [Config]","id":1}"#)
    }

    func testInitFailureIsAnErrorNamingModuleHandlerAndReason() {
        XCTAssertThrowsError(try service { $0.config = ["FailInit": "no database"] }) { error in
            XCTAssertEqual("\(error)", "module \(image.path) refused: init failed for handler 'test': asked to fail: no database")
        }
    }

    func testInvalidJSONFromAModuleBecomesInternalError() throws {
        let service = try service()
        XCTAssertEqual(try call(service, request("bad_json")),
                       #"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":1}"#)
    }

    /// Isolated (the default), a result that is not one JSON value is refused by rpcd where it arrives, as it
    /// is in-process: the host does not check it first (`HostFunctions.checksResults`), rpcd takes no host's word.
    func testAnIsolatedModulesInvalidJSONIsRefusedByRpcdAsInProcess() throws {
        let modules = directory.appendingPathComponent("modules")
        try FileManager.default.createDirectory(at: modules, withIntermediateDirectories: true)
        _ = try TestModule.build(into: modules, name: "isolated")
        let handlers = directory.appendingPathComponent("handlers.d")
        try FileManager.default.createDirectory(at: handlers, withIntermediateDirectories: true)
        try "[Handler]\nModule=isolated\n".write(to: handlers.appendingPathComponent("isolated.conf"), atomically: true, encoding: .utf8)
        let handlerSet = HandlerSet(
            directories: HandlerDirectories(directories: [handlers.path]), moduleDirectories: ModuleDirectories([modules.path]),
            reservedServices: [], pool: pool, logger: Logger(label: "test"), group: group)
        let generation = try handlerSet.prepare(strict: false)
        handlerSet.commit(generation)
        defer { handlerSet.retireAll() }
        let service = try XCTUnwrap(generation.services.first as? IsolatedModuleService, "\(generation.problems)")
        XCTAssertEqual(try call(service, request("bad_json")),
                       #"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":1}"#)
        XCTAssertEqual(try call(service, request("ok")), #"{"jsonrpc":"2.0","result":42,"id":1}"#)
    }

    func testSecondAnswerIsIgnored() throws {
        let service = try service()
        XCTAssertEqual(try call(service, request("twice")), #"{"jsonrpc":"2.0","result":1,"id":1}"#)
        XCTAssertEqual(service.instance.callsInModule, 0)
    }

    func testAnswerFromAnotherThreadLater() throws {
        let service = try service()
        XCTAssertEqual(try call(service, request("later", "[20]")), #"{"jsonrpc":"2.0","result":"late","id":1}"#)
    }

    func testTimeoutAnswersTheCallerAndTheLateAnswerIsDropped() throws {
        let service = try service { $0.timeout = .milliseconds(50) }
        let reply = try JSONValue(parsing: XCTUnwrap(call(service, request("later", "[400]"))))
        XCTAssertEqual(reply["error"]?["code"], -32003)
        XCTAssertEqual(reply["error"]?["data"]?["timeout_ms"], 50)
        XCTAssertEqual(service.instance.callsInModule, 1, "the module still holds the call until it answers")
        try waitUntilTheModuleAnswered(service)
    }

    /// Past `Timeout=` nobody waits for the module's answer: the module is told as for a cancellation (its
    /// cancel() runs, call_cancelled() turns 1 for its polling thread), and the call keeps its slot until the
    /// module answers.
    func testTimeoutTellsTheModuleAsACancellation() throws {
        // Long enough that the worker pool has started the module's call when it fires, even on a loaded
        // machine: a call that times out before the module began it has nothing to tell the module.
        let service = try service { $0.timeout = .milliseconds(500) }
        let handle = image.handle
        let cancelCalls = try XCTUnwrap(dlsym(handle, "test_cancel_calls")).assumingMemoryBound(to: Int32.self)
        let callsBefore = cancelCalls.pointee
        let reply = try JSONValue(parsing: XCTUnwrap(call(service, request("wait_cancel"))))
        XCTAssertEqual(reply["error"]?["code"], -32003)
        let waitForCancel = unsafeBitCast(try XCTUnwrap(dlsym(handle, "test_wait_for_cancel")), to: (@convention(c) (Int32) -> Int32).self)
        XCTAssertEqual(waitForCancel(10), 0, "the module's thread saw call_cancelled() turn 1")
        // call_cancelled() turns 1 just before cancel() is called; the module's polling thread (every 1 ms) may
        // answer the cancellation in between, and a call the module has answered gets no cancel(). So cancel()
        // ran once, or not at all because the module had already answered: never twice.
        XCTAssertLessThanOrEqual(cancelCalls.pointee - callsBefore, 1, "cancel() ran at most once")
        try waitUntilTheModuleAnswered(service)
        XCTAssertEqual(service.instance.callsHoldingSlots, 0, "its slot came back with the module's answer")
    }

    /// Past `Timeout=` the module's cancel() runs once, before the caller is answered (the test above cannot
    /// tell this apart from the module's own polling): a call only cancel() answers gets its answer then, and
    /// its slot comes back.
    func testTimeoutCallsTheModulesCancelOnceBeforeAnswering() throws {
        let service = try service { $0.timeout = .milliseconds(100) }
        let cancelCalls = try XCTUnwrap(dlsym(image.handle, "test_cancel_calls")).assumingMemoryBound(to: Int32.self)
        let callsBefore = cancelCalls.pointee
        let reply = try JSONValue(parsing: XCTUnwrap(call(service, request("await_cancel"))))
        XCTAssertEqual(reply["error"]?["code"], -32003)
        XCTAssertEqual(cancelCalls.pointee, callsBefore + 1, "cancel() ran once, before the timeout answered")
        try waitUntilTheModuleAnswered(service)
        XCTAssertEqual(service.instance.callsHoldingSlots, 0, "its slot came back with cancel()'s answer")
    }

    func testMaxConcurrencyRefusesPastTheLimit() throws {
        let service = try service { $0.maxConcurrency = 1 }
        let router = RPCRouter(registry: try RPCServiceRegistry(services: [service]), parser: RPCEnvelopeParser())
        let loop = group.next()
        let batch = "[" + request("later", "[200]", id: 1) + "," + request("later", "[200]", id: 2) + "]"
        let reply = loop.makePromise(of: String?.self)
        loop.execute {
            router.dispatch(router.parser.parse(ByteBuffer(string: batch)),
                            connection: RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "t")), eventLoop: loop) {
                reply.succeed($0.map { String(buffer: $0) })
            }
        }
        let replies = try JSONValue(parsing: XCTUnwrap(reply.futureResult.wait())).arrayValue ?? []
        XCTAssertEqual(Set(replies.map { $0["result"] ?? $0["error"]?["code"] ?? .null }), ["late", -32004])
    }

    /// rpc.cancel: the caller is answered -32011 at once, the slot under MaxConcurrency= is free at once, the
    /// module's cancel() runs once and call_cancelled() turns 1 for its polling thread; the module's own answer
    /// later is dropped, and then the instance holds no call.
    func testCancelReachesTheModuleAndFreesTheSlotAtOnce() throws {
        let service = try service { $0.maxConcurrency = 1 }
        let counters = image.handle
        let cancelCalls = try XCTUnwrap(dlsym(counters, "test_cancel_calls")).assumingMemoryBound(to: Int32.self)
        let cancelPolls = try XCTUnwrap(dlsym(counters, "test_cancel_polled")).assumingMemoryBound(to: Int32.self)
        let (callsBefore, pollsBefore) = (cancelCalls.pointee, cancelPolls.pointee)
        let router = RPCRouter(
            registry: try RPCServiceRegistry(services: [service, RPCDiscoverService()]), parser: RPCEnvelopeParser())
        let loop = group.next()
        let connection = RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "t"))
        let waited = loop.makePromise(of: String?.self)
        let cancelled = loop.makePromise(of: String?.self)
        let slotsWhileRunning = loop.makePromise(of: Int.self)
        let waitCall = ByteBuffer(string: request("wait_cancel", id: 7))
        loop.execute {
            router.dispatch(router.parser.parse(waitCall),
                            connection: connection, eventLoop: loop) { waited.succeed($0.map { String(buffer: $0) }) }
            slotsWhileRunning.succeed(service.instance.callsHoldingSlots)
            let cancel = #"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":7},"id":8}"#
            router.dispatch(router.parser.parse(ByteBuffer(string: cancel)), connection: connection, eventLoop: loop) {
                cancelled.succeed($0.map { String(buffer: $0) })
            }
        }
        XCTAssertEqual(try slotsWhileRunning.futureResult.wait(), 1)
        XCTAssertEqual(try waited.futureResult.wait(),
                       #"{"jsonrpc":"2.0","error":{"code":-32011,"message":"Call cancelled"},"id":7}"#)
        XCTAssertEqual(try cancelled.futureResult.wait(), #"{"jsonrpc":"2.0","result":true,"id":8}"#)
        XCTAssertEqual(service.instance.callsHoldingSlots, 0, "the slot is free before the module answers")
        XCTAssertEqual(try call(service, request("ok")), #"{"jsonrpc":"2.0","result":42,"id":1}"#)

        let handle = image.handle
        let waitForCancel = unsafeBitCast(try XCTUnwrap(dlsym(handle, "test_wait_for_cancel")), to: (@convention(c) (Int32) -> Int32).self)
        XCTAssertEqual(waitForCancel(10), 0, "the module's thread saw call_cancelled() turn 1")
        XCTAssertEqual(cancelCalls.pointee, callsBefore + 1)
        XCTAssertEqual(cancelPolls.pointee, pollsBefore + 1)
        try waitUntilTheModuleAnswered(service)
        XCTAssertEqual(connection.inFlight.count, 0)
    }

    /// A connection that ends cancels its calls: the module is told, nobody is answered.
    func testClosedConnectionCancelsItsCalls() throws {
        let service = try service()
        let router = RPCRouter(registry: try RPCServiceRegistry(services: [service]), parser: RPCEnvelopeParser())
        let loop = group.next()
        let connection = RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "t"))
        let inFlight = loop.makePromise(of: Int.self)
        let waitCall = ByteBuffer(string: request("wait_cancel", id: 1))
        loop.execute {
            router.dispatch(router.parser.parse(waitCall),
                            connection: connection, eventLoop: loop) { _ in }
            inFlight.succeed(connection.inFlight.count)
            connection.inFlight.cancelAll()
        }
        XCTAssertEqual(try inFlight.futureResult.wait(), 1)
        let handle = image.handle
        let waitForCancel = unsafeBitCast(try XCTUnwrap(dlsym(handle, "test_wait_for_cancel")), to: (@convention(c) (Int32) -> Int32).self)
        XCTAssertEqual(waitForCancel(10), 0)
        XCTAssertEqual(service.instance.callsHoldingSlots, 0)
    }

    func testBlockingMethodRunsOnThePoolAndLeavesTheLoopFree() throws {
        let service = try service()
        let router = RPCRouter(registry: try RPCServiceRegistry(services: [service]), parser: RPCEnvelopeParser())
        let loop = group.next()
        let connection = RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "t"))
        let order = Mutex<[String]>([])
        let done = expectation(description: "both answered")
        done.expectedFulfillmentCount = 2
        let requests = [("block", request("block", id: 1)), ("ok", request("ok", id: 2))]
        loop.execute {
            for (method, payload) in requests {
                router.dispatch(router.parser.parse(ByteBuffer(string: payload)), connection: connection, eventLoop: loop) { _ in
                    order.withLock { $0.append(method) }
                    done.fulfill()
                }
            }
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(order.withLock { $0 }, ["ok", "block"], "the 300 ms blocking call did not hold up the loop")
    }

    func testRetiredInstanceIsDeinitialisedOnlyAfterItsLastCall() throws {
        let service = try service()
        let handle = image.handle
        let deinitCount = try XCTUnwrap(dlsym(handle, "test_deinit_count")).assumingMemoryBound(to: Int32.self)
        let before = deinitCount.pointee
        let router = RPCRouter(registry: try RPCServiceRegistry(services: [service]), parser: RPCEnvelopeParser())
        let loop = group.next()
        let reply = loop.makePromise(of: String?.self)
        let payload = request("later", "[200]")
        loop.execute {
            router.dispatch(router.parser.parse(ByteBuffer(string: payload)),
                            connection: RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "t")), eventLoop: loop) {
                reply.succeed($0.map { String(buffer: $0) })
            }
        }
        try loop.submit {}.wait()  // the call has entered the module
        service.retire()
        XCTAssertEqual(deinitCount.pointee, before, "a call is in flight")
        XCTAssertEqual(try reply.futureResult.wait(), #"{"jsonrpc":"2.0","result":"late","id":1}"#)
        // deinit runs on the module's answering thread once its reply is handed over, so it may come just
        // after the reply reaches the loop: wait for it (earlier tests' deinits may still be counted first).
        let waitForDeinit = unsafeBitCast(
            try XCTUnwrap(dlsym(handle, "test_wait_for_deinit")), to: (@convention(c) (Int32) -> Int32).self)
        while deinitCount.pointee <= before, waitForDeinit(30) == 0 {}
        XCTAssertTrue(service.instance.isDeinitialized)
        XCTAssertEqual(deinitCount.pointee, before + 1)
        let late = try JSONValue(parsing: XCTUnwrap(call(service, request("ok"))))
        XCTAssertEqual(late["error"]?["code"], -32005, "a call routed after de-initialisation is refused, not run")
    }
}
