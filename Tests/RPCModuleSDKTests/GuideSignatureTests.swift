import RPCJSON
import RPCModuleSDK
import XCTest

/// docs/MODULES.md's "The signatures, exactly" block, each line used as written there: a renamed or reordered
/// argument breaks this file's build before a module author finds it by guessing (issue 40).
final class GuideSignatureTests: XCTestCase {
    func testTheGuidesSignaturesCompileAsWritten() throws {
        let params: [RPCParam] = [
            RPCParam("value", schema: ["type": "string"], optional: true, summary: "Any string"),
            .integer("ms", minimum: 0, maximum: 60_000, optional: true, summary: "Milliseconds"),
            .array("xs", items: ["type": "number"], optional: false, summary: "Numbers"),
            .number("a", optional: false, summary: ""), .string("key"), .boolean("flag"), .object("o"), .any("v"),
        ]
        XCTAssertEqual(params[1].summary, "Milliseconds")
        XCTAssertEqual(params[1].schema, ["type": "integer", "minimum": 0, "maximum": 60_000])
        let result: RPCParam = .boolean("stored")
        XCTAssertEqual(result.name, "stored")

        let logged = Logged()
        let context = RPCModuleContext(log: { _, message, fields in logged.add(message, fields) })
        context.logger.error("Store not written", ["file": "/var/lib/notes.json"])
        context.logger.warning("w")
        context.logger.notice("n")
        context.logger.info("i")
        context.logger.debug("d", [:])
        XCTAssertEqual(logged.count, 5)
        let event = RPCModuleEvent<String>("changed")
        let sent: Bool = context.emit(event, "payload")
        XCTAssertTrue(sent, "a local context takes every event (inside rpcd, false when it was not sent)")

        let state: String? = RPCModuleContext(stateDirectory: NSTemporaryDirectory()).stateDirectory
        let file = try XCTUnwrap(state) + "/rpcd-guide-\(UUID().uuidString).json"
        defer { unlink(file) }
        XCTAssertNil(try RPCStateFile.read([String: Int].self, from: file))
        try RPCStateFile.write(["a": 1], to: file)
        XCTAssertEqual(try RPCStateFile.read([String: Int].self, from: file), ["a": 1])

        let count = Int.random(in: 1...9)
        let error = RPCError(code: 2, message: "Store full", data: ["count": .number(count), "key": .string("k")])
        XCTAssertEqual(error.data?["count"], .number(count))
    }
}

private final class Logged: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(String, [String: String])] = []
    func add(_ message: String, _ fields: [String: String]) { lock.withLock { entries.append((message, fields)) } }
    var count: Int { lock.withLock { entries.count } }
}
