import RPCCore
import RPCJSON
import XCTest

final class DiscoveryTests: XCTestCase {
    func testDiscoverDescribesEveryMethodAsOpenRPC() throws {
        let harness = try RouterHarness(services: [SpecService(), RPCDiscoverService()])
        let document = try XCTUnwrap(harness.call(#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#)["result"])
        XCTAssertEqual(document["openrpc"], "1.3.2")
        let names = document["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        XCTAssertEqual(names, ["rpc.discover", "spec.subtract", "spec.sum", "spec.update", "spec.notify_hello", "spec.get_data", "spec.explode", "spec.product"])
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
}
