@testable import RPCModuleSDK
import XCTest

/// A body without `await` gets the overload that runs it as a plain call (no task, no hop); one with `await`
/// the async one. Which one Swift picks is what makes a module's non-suspending methods cheap.
final class SyncBodyTests: XCTestCase {
    func testClosuresWithoutAwaitAreRunDirectly() throws {
        let methods = Dictionary(uniqueKeysWithValues: TestModule.methods.map { ($0.name, $0) })
        XCTAssertNotNil(methods["taskless"]?.runNow)
        XCTAssertNotNil(methods["add"]?.runNow)
        XCTAssertNil(methods["sleep"]?.runNow, "sleep awaits: it runs in a task")
        let module = try TestModule(context: RPCModuleContext(config: [:]) { _, _, _ in })
        XCTAssertEqual(try methods["taskless"]?.runNow?(module, RPCParamsText([])), Array("true".utf8))
    }
}
