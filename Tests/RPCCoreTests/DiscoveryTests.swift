import NIOCore
import RPCBinding
import RPCCore
import RPCJSON
import RPCServer
import XCTest

final class DiscoveryTests: XCTestCase {
    func testDiscoverDescribesEveryMethodAsOpenRPC() throws {
        let harness = try RouterHarness(services: [SpecService(), RPCDiscoverService()])
        let document = try XCTUnwrap(harness.call(#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#)["result"])
        XCTAssertEqual(document["openrpc"], "1.3.2")
        let names = document["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        XCTAssertEqual(names, ["rpc.discover", "rpc.cancel", "rpc.subscribe", "rpc.unsubscribe", "spec.subtract", "spec.sum", "spec.update", "spec.notify_hello", "spec.get_data", "spec.explode", "spec.product"])
        let subtract = document["methods"]?.arrayValue?.first { $0["name"] == "spec.subtract" }
        XCTAssertEqual(subtract?["params"]?[0]?["name"], "minuend")
        XCTAssertEqual(subtract?["params"]?[0]?["schema"], ["type": "number"])
        XCTAssertEqual(document["x-rpcd-services"]?[1]?["fingerprint"], .string(SpecService().descriptor.fingerprint))
    }

    func testFingerprintChangesWithTheInterfaceOnly() {
        let base = SpecService().descriptor
        var reworded = base
        reworded.summary = "different words"
        reworded.version = "2"
        XCTAssertEqual(base.fingerprint, reworded.fingerprint)
        XCTAssertEqual(base.fingerprint.count, 16)

        var renamedParam = base
        renamedParam.methods[0].params[0].name = "a"
        XCTAssertNotEqual(base.fingerprint, renamedParam.fingerprint)

        var retyped = base
        retyped.methods[0].params[1].schema = ["type": "string"]
        XCTAssertNotEqual(base.fingerprint, retyped.fingerprint)

        var reordered = base
        reordered.methods.reverse()
        XCTAssertEqual(base.fingerprint, reordered.fingerprint, "method order is not part of the interface")
    }

    /// Events are part of the interface, but a service without any keeps the fingerprint it had before rpcd
    /// had events (this literal is the one rpcd 0.2 computed for `spec`).
    func testEventsArePartOfTheFingerprintOnlyWhenThereAreAny() {
        let base = SpecService().descriptor
        XCTAssertEqual(base.fingerprint, Self.fingerprintBeforeEvents)
        var withEvent = base
        withEvent.events = [RPCEventDescriptor(name: "changed", schema: ["type": "object"])]
        XCTAssertNotEqual(withEvent.fingerprint, base.fingerprint)
        var reschema = withEvent
        reschema.events[0].schema = ["type": "string"]
        XCTAssertNotEqual(reschema.fingerprint, withEvent.fingerprint)
        var resummarized = withEvent
        resummarized.events[0].summary = "other words"
        XCTAssertEqual(resummarized.fingerprint, withEvent.fingerprint)
    }

    private static let fingerprintBeforeEvents = "9df147923a8ee366"

    func testDiscoverListsEventsUnderXEvents() throws {
        struct Ticks: RPCService {
            let descriptor = RPCServiceDescriptor(
                name: "ticks", version: "1", summary: "", methods: [],
                events: [RPCEventDescriptor(name: "tick", summary: "Every second", schema: ["type": "integer"])])
            func handle(_ call: RPCCall, responder: RPCResponder) {}
        }
        let harness = try RouterHarness(services: [Ticks(), RPCDiscoverService()])
        let document = try XCTUnwrap(harness.call(#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#)["result"])
        XCTAssertEqual(document["x-events"], [["name": "ticks.tick", "summary": "Every second", "schema": ["type": "integer"]]])
        XCTAssertEqual(document["x-rpcd-services"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["rpc", "ticks"])
    }

    /// A built-in service declares its events beside its methods, and publishes them through the router's hub.
    func testATypedServiceDeclaresItsEventsWithItsMethods() throws {
        struct Clock: RPCTypedService {
            static let name = "clock"
            static let version = "1"
            static let summary = "Ticks"
            static let methods: [RPCServiceMethod<Clock>] = [.method("now", flags: .readOnly) { _, _ in 0 }]
            static let events = [RPCEventDescriptor(name: "tick", schema: ["type": "integer"])]
            let descriptor = Self.makeDescriptor()
        }
        XCTAssertEqual(Clock().descriptor.events.map(\.name), ["tick"])
        let harness = try RouterHarness(services: [Clock(), RPCDiscoverService()])
        XCTAssertNotNil(harness.router.registry.events["clock.tick"])
        XCTAssertFalse(harness.router.events.hasSubscribers("clock.tick"))
        harness.router.events.publish("clock.tick", payload: ByteBuffer(string: "1"))
        XCTAssertEqual(harness.router.events.published.value, 1)
    }
}
