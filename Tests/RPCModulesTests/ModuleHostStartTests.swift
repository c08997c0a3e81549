import RPCJSON
import RPCModuleLink
@testable import RPCModules
import XCTest

/// What rpcd tells a module host to load, and how to initialise it, survives the link.
final class ModuleHostStartTests: XCTestCase {
    func testAStartMessageCarriesWhatTheHostNeeds() throws {
        var configuration = HandlerConfiguration(name: "store")
        configuration.service = "kv2"
        configuration.config = ["File": "/var/lib/rpcd/kv.json", "MaxKeys": "5"]
        configuration.timeout = .seconds(3)
        let start = ModuleHostStart(modulePath: "/usr/lib/rpcd/modules/libkv.so", configuration: configuration)
        let decoded = try XCTUnwrap(JSONValue(linkBuffer: start.json.linkBuffer).flatMap(ModuleHostStart.init(json:)))
        XCTAssertEqual(decoded, start)
        // The host's own configuration has no limits: rpcd applies them before a call crosses the link.
        XCTAssertNil(decoded.configuration.timeout)
        XCTAssertEqual(decoded.configuration.isolation, .none)
        XCTAssertEqual(decoded.configuration.config, configuration.config)
    }
}
