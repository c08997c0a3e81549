import RPCConfig
import RPCJSON
import RPCModuleLink
@testable import RPCModuleHost
import XCTest

/// What rpcd tells a module host to load, and how to initialise it, survives the link.
final class ModuleHostStartTests: XCTestCase {
    func testAStartMessageCarriesWhatTheHostNeeds() throws {
        var configuration = HandlerConfiguration(name: "store")
        configuration.service = "kv2"
        configuration.config = ["File": "/var/lib/rpcd/kv.json", "MaxKeys": "5"]
        // Where each [Config] key was written: the host checks them before init, with rpcd's own errors.
        configuration.configEntries = [
            INIEntry(section: "Config", key: "File", value: "/var/lib/rpcd/kv.json", file: "/etc/rpcd/handlers.d/store.conf", line: 4),
            INIEntry(section: "Config", key: "MaxKyes", value: "5", file: "/etc/rpcd/handlers.d/store.conf", line: 5),
        ]
        configuration.timeout = .seconds(3)
        let start = ModuleHostStart(modulePath: "/usr/lib/rpcd/modules/libkv.so", configuration: configuration)
        let decoded = try XCTUnwrap(JSONValue(linkBuffer: start.json.linkBuffer).flatMap(ModuleHostStart.init(json:)))
        XCTAssertEqual(decoded, start)
        XCTAssertEqual(decoded.configuration.configEntries, configuration.configEntries)
        XCTAssertFalse(decoded.checkOnly)
        let check = ModuleHostStart(modulePath: "/usr/lib/rpcd/modules/libkv.so", configuration: configuration, checkOnly: true)
        XCTAssertEqual(JSONValue(linkBuffer: check.json.linkBuffer).flatMap(ModuleHostStart.init(json:))?.checkOnly, true)
        // The host's own configuration has no limits: rpcd applies them before a call crosses the link.
        XCTAssertNil(decoded.configuration.timeout)
        XCTAssertEqual(decoded.configuration.isolation, .none)
        XCTAssertEqual(decoded.configuration.config, configuration.config)
    }

    /// The state directory crosses to the host with the sandbox: writable there (Landlock), and handed over.
    func testTheStateDirectoryCrossesInTheHostsArguments() throws {
        var sandbox = HandlerSandbox()
        sandbox.readWritePaths = ["/srv/data"]
        sandbox.stateDirectory = "/var/lib/rpcd/notes"
        let arguments = ModuleHostArguments(handler: "notes", modulePath: "/usr/lib/rpcd/modules/libnotes.so", sandbox: sandbox)
        let parsed = try XCTUnwrap(ModuleHostArguments(parsing: arguments.arguments))
        XCTAssertEqual(parsed, arguments)
        XCTAssertEqual(parsed.sandbox.writablePaths, ["/srv/data", "/var/lib/rpcd/notes"])
        sandbox.stateDirectory = nil
        XCTAssertNil(ModuleHostArguments(parsing: ModuleHostArguments(handler: "n", modulePath: "/m.so", sandbox: sandbox).arguments)?.sandbox.stateDirectory)
    }
}
