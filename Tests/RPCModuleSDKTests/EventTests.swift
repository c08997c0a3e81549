import CRPCDModule
import RPCJSON
import RPCModuleSDK
import XCTest

/// Declared events and `context.emit`, through the exported descriptor and a real host table.
final class EventTests: XCTestCase {
    let subject = ModuleUnderTest(RPCModuleExport.entry(OtherModule.self))

    func testEventsAreInTheDescriptorAsRpcdReadsThem() throws {
        let module = subject.module
        XCTAssertEqual(module.n_events, 1)
        let event = try XCTUnwrap(module.events?.pointee)
        XCTAssertEqual(Int(event.struct_size), MemoryLayout<rpcd_event>.stride)
        XCTAssertEqual(String(cString: event.name), "announced")
        XCTAssertEqual(String(cString: event.summary), "Something was announced.")
        XCTAssertEqual(try JSONValue(parsing: String(cString: event.schema_json)), ["type": "object", "required": ["text"]])
        XCTAssertNil(ModuleUnderTest(RPCModuleExport.entry(TestModule.self)).module.events, "no events, no array")
    }

    func testEmitSendsTheEncodedPayloadThroughTheHost() async throws {
        let instance = try subject.start()
        defer { instance.deinitialize() }
        try await instance.expect("announce", #"["hi"]"#, .result("true"))
        let emitted = TestHost.shared.emitted(instance.handler)
        XCTAssertEqual(emitted.map(\.event), ["announced"])
        XCTAssertEqual(try JSONValue(parsing: emitted[0].payload), ["text": "hi", "count": 1])
    }

    /// An rpcd older than events hands a table that ends after config_get: emit says it sent nothing, and
    /// reads nothing past the table's end.
    func testEmitIsAFalseNoOpWithAHostThatPredatesEvents() async throws {
        let older = TestHost.shared.modifiedTable { $0.struct_size = UInt32(MemoryLayout<rpcd_host>.offset(of: \rpcd_host.call_cancelled)!) }
        guard case .success(let instance) = subject.initialize(host: older) else { return XCTFail("init failed") }
        defer { instance.deinitialize() }
        try await instance.expect("announce", #"["hi"]"#, .result("false"))
        XCTAssertTrue(TestHost.shared.emitted(instance.handler).isEmpty)
    }

    func testALocalContextHandsEmittedEventsToTheTest() throws {
        let seen = Seen()
        let module = OtherModule(context: RPCModuleContext(emitted: { name, json in seen.add(name, json) }))
        XCTAssertTrue(module.context.emit(OtherModule.announced, .init(text: "x", count: 2)))
        XCTAssertEqual(seen.values.map(\.0), ["announced"])
        XCTAssertEqual(try JSONValue(parsing: String(decoding: seen.values[0].1, as: UTF8.self)), ["text": "x", "count": 2])
    }

    func testProblemsNameInvalidAndDuplicateEvents() {
        XCTAssertEqual(RPCModuleExport.problems(of: OtherModule.self), [])
        XCTAssertEqual(
            RPCModuleExport.problems(of: BadEvents.self),
            ["event name 'bad-name' is not \(MemberName.rule)", "event 'twice' is declared twice"])
    }
}

private final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [(String, [UInt8])] = []
    func add(_ name: String, _ json: [UInt8]) { lock.withLock { stored.append((name, json)) } }
    var values: [(String, [UInt8])] { lock.withLock { stored } }
}

private struct BadEvents: RPCModule {
    static let name = "bad-events"
    static let version = "1"
    static let summary = ""
    init(context: RPCModuleContext) {}
    static var methods: [RPCModuleMethod<BadEvents>] { [] }
    static var events: [any RPCModuleEventDeclaration] {
        [RPCModuleEvent<Int>("bad-name"), RPCModuleEvent<Int>("twice"), RPCModuleEvent<String>("twice")]
    }
}
