import CRPCDModule
import Foundation
import RPCJSON
import XCTest

/// The example modules as rpcd sees them: dlopen()ed from the build directory (they are built next to this
/// test bundle by `swift build --build-tests`), entry symbol looked up by name, driven through the C ABI.
/// Each Swift module carries its own copy of the SDK, separate from the one linked into this test bundle.
final class ExampleModulesTests: XCTestCase {
    static func load(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> ModuleUnderTest {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        if directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS" {
            directory = Bundle.main.bundleURL.deletingLastPathComponent()
        }
        let path = directory.appendingPathComponent("lib\(name).so").path
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown"
            XCTFail("cannot load \(path) (build the products first: swift build --build-tests): \(reason)", file: file, line: line)
            throw CancellationError()
        }
        // Never dlclose()d, as in rpcd.
        guard let symbol = dlsym(handle, RPCD_MODULE_ENTRY_SYMBOL) else {
            XCTFail("\(path) does not export \(RPCD_MODULE_ENTRY_SYMBOL)", file: file, line: line)
            throw CancellationError()
        }
        let entry = unsafeBitCast(symbol, to: rpcd_module_entry_fn.self)
        return ModuleUnderTest(UnsafeRawPointer(entry()!))
    }

    // MARK: calc

    func testCalc() async throws {
        let calc = try Self.load("calc")
        XCTAssertEqual(String(cString: calc.module.name), "calc")
        XCTAssertEqual(calc.methodNames, ["add", "subtract", "multiply", "divide", "sum"])
        let instance = try calc.start()
        defer { instance.deinitialize() }
        try await instance.expectResult("add", "[1, 2]", 3)
        try await instance.expectResult("add", #"{"a": 0.5, "b": 0.25}"#, 0.75)
        try await instance.expectResult("subtract", "[10, 4]", 6)
        try await instance.expectResult("subtract", #"{"subtrahend": 4, "minuend": 10}"#, 6)
        try await instance.expectResult("multiply", "[-3, 4]", -12)
        try await instance.expectResult("divide", "[1, 4]", 0.25)
        try await instance.expect("divide", "[10, 0]", .error(code: 1, message: "Division by zero", data: #"{"dividend":10}"#))
        try await instance.expect("multiply", "[1e308, 10]", .error(code: 2, message: "Result out of range", data: #"{"result":"inf"}"#))
        try await instance.expectInvalidParams("add", #"[1, "2"]"#, "parameter 'b': expected a number, got a string")
        try await instance.expectInvalidParams("divide", "[1]", "missing parameter 'divisor'")
        try await instance.expectResult("sum", "[1, 2, 3.5]", 6.5)
        try await instance.expectResult("sum", nil, 0)
        try await instance.expectResult("sum", "[]", 0)
        try await instance.expectInvalidParams("sum", #"[1, "x"]"#, "params[1]: expected a number, got a string")
        try await instance.expectInvalidParams("sum", #"{"a": 1}"#, "sum takes its params as a list, by position")
        let add = try XCTUnwrap(calc.method("add"))
        XCTAssertEqual(try JSONValue(parsing: String(cString: add.params[0].schema_json)), ["type": "number"])
        // The interface's documented errors and list-taking method reach the ABI (rpc.discover's errors, by-position).
        let divide = try XCTUnwrap(calc.method("divide"))
        XCTAssertEqual(
            try JSONValue(parsing: String(cString: try XCTUnwrap(divide.errors_json))),
            [["code": 1, "message": "Division by zero"], ["code": 2, "message": "Result out of range"]])
        XCTAssertEqual(try XCTUnwrap(calc.method("sum")).flags & UInt32(RPCD_METHOD_BY_POSITION), UInt32(RPCD_METHOD_BY_POSITION))
        XCTAssertEqual(add.flags & UInt32(RPCD_METHOD_BY_POSITION), 0)
    }

    // MARK: echo

    func testEcho() async throws {
        let echo = try Self.load("echo")
        XCTAssertEqual(echo.methodNames, ["echo", "sleep"])
        let instance = try echo.start()
        defer { instance.deinitialize() }
        // Byte for byte: echo hands the params' text through without decoding it.
        try await instance.expect("echo", #"[1.50, {"b": null}, "\u00e9"]"#, .result(#"[1.50, {"b": null}, "\u00e9"]"#))
        try await instance.expect("echo", nil, .result("null"))
        try await instance.expect("sleep", "[1]", .result(#""done""#))
        try await instance.expectInvalidParams("sleep", "[60001]", "parameter 'ms': must be at most 60000")
        try await instance.expectInvalidParams("sleep", "[-1]", "parameter 'ms': must be at least 0")

        // Sleeps overlap: 20 calls of 200 ms finish in far less than 20 × 200 ms.
        let started = ContinuousClock.now
        let calls = (0..<20).map { _ in instance.send("sleep", #"{"ms": 200}"#) }
        XCTAssertLessThan(ContinuousClock.now - started, .milliseconds(150), "call() must return at once")
        for call in calls {
            let reply = try await TestHost.shared.waitForReply(call)
            XCTAssertEqual(reply, .result(#""done""#))
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2))
    }

    // MARK: kv

    func testKVInMemory() async throws {
        let kv = try Self.load("kv")
        let instance = try kv.start()
        defer { instance.deinitialize() }
        XCTAssertEqual(instance.logs, [LogEntry(priority: 6, message: "Store opened", fields: ["KEYS": "0"])])
        try await instance.expectResult("list", nil, [])
        try await instance.expect("get", #"["a"]"#, .error(code: 1, message: "No such key", data: #"{"key":"a"}"#))
        try await instance.expectResult("set", #"["a", {"n": 1.50}]"#, true)
        try await instance.expectResult("set", #"{"key": "b", "value": null}"#, true)
        try await instance.expect("get", #"{"key": "a"}"#, .result(#"{"n":1.50}"#))
        try await instance.expect("get", #"["b"]"#, .result("null"))
        try await instance.expectResult("list", nil, ["a", "b"])
        try await instance.expectResult("delete", #"["a"]"#, true)
        try await instance.expectResult("delete", #"["a"]"#, false)
        try await instance.expectResult("list", nil, ["b"])
        try await instance.expectInvalidParams("set", #"["k"]"#, "missing parameter 'value'")
    }

    func testKVPersistsToItsFile() async throws {
        let kv = try Self.load("kv")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kv-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("store.json").path

        let first = try kv.start(config: ["File": file])
        XCTAssertEqual(first.logs.first?.fields["FILE"], file)
        try await first.expectResult("set", #"["x", [1, 2, 123456789012345678901234567890]]"#, true)
        try await first.expectResult("set", #"["y", "why"]"#, true)
        try await first.expectResult("delete", #"["y"]"#, true)
        first.deinitialize()
        XCTAssertEqual(
            try JSONValue(parsing: String(contentsOfFile: file, encoding: .utf8)),
            .object(["x": .array([1, 2, .number("123456789012345678901234567890")])]))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["store.json"], "no temporary files left")

        let second = try kv.start(config: ["File": file])
        defer { second.deinitialize() }
        try await second.expect("get", #"["x"]"#, .result("[1,2,123456789012345678901234567890]"))
        try await second.expectResult("list", nil, ["x"])
    }

    /// No client can grow the store without bound (issue 14): a set past MaxKeys= or MaxBytes= is refused with
    /// error 2 and changes nothing; deleting makes room again.
    func testKVIsBounded() async throws {
        let kv = try Self.load("kv")
        let instance = try kv.start(config: ["MaxKeys": "2", "MaxBytes": "40"])
        defer { instance.deinitialize() }
        try await instance.expectResult("set", #"["a", 1]"#, true)
        try await instance.expectResult("set", #"["b", 2]"#, true)
        try await instance.expect("set", #"["c", 3]"#, .error(code: 2, message: "Store full", data: #"{"limit":"MaxKeys","value":2}"#))
        try await instance.expectResult("set", #"["a", 10]"#, true)  // replacing a key needs no new one
        try await instance.expect(
            "set", #"["b", "0123456789012345678901234567890123456789"]"#,
            .error(code: 2, message: "Store full", data: #"{"limit":"MaxBytes","value":40}"#))
        try await instance.expectResult("list", nil, ["a", "b"])
        try await instance.expectResult("delete", #"["b"]"#, true)
        try await instance.expectResult("set", #"["c", 3]"#, true)
        guard case .failure(let failure) = kv.initialize(config: ["MaxKeys": "many"]) else { return XCTFail("init succeeded") }
        XCTAssertEqual(failure.reason, "MaxKeys= must be a positive whole number, not 'many'")
    }

    func testKVRefusesAnUnusableFileNamingIt() throws {
        let kv = try Self.load("kv")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kv-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let corrupt = directory.appendingPathComponent("corrupt.json").path
        try "{\"a\": ".write(toFile: corrupt, atomically: true, encoding: .utf8)
        guard case .failure(let failure) = kv.initialize(config: ["File": corrupt]) else { return XCTFail("init succeeded") }
        XCTAssertEqual(failure.reason?.hasPrefix("\(corrupt) is not valid JSON: "), true, failure.reason ?? "")

        let array = directory.appendingPathComponent("array.json").path
        try "[1]".write(toFile: array, atomically: true, encoding: .utf8)
        guard case .failure(let notObject) = kv.initialize(config: ["File": array]) else { return XCTFail("init succeeded") }
        XCTAssertEqual(notObject.reason, "\(array) does not hold a JSON object")

        let isDirectory = directory.path
        guard case .failure(let unreadable) = kv.initialize(config: ["File": isDirectory]) else { return XCTFail("init succeeded") }
        XCTAssertEqual(unreadable.reason?.hasPrefix("cannot read \(isDirectory): "), true, unreadable.reason ?? "")

        let nowhere = directory.appendingPathComponent("missing/store.json").path
        guard case .failure(let noDirectory) = kv.initialize(config: ["File": nowhere]) else { return XCTFail("init succeeded") }
        XCTAssertEqual(noDirectory.reason?.hasPrefix("cannot create \(nowhere): "), true, noDirectory.reason ?? "")

        // A missing file in an existing directory is an empty store.
        let fresh = try kv.start(config: ["File": directory.appendingPathComponent("new.json").path])
        fresh.deinitialize()
    }

    // MARK: sysinfo (C)

    func testSysinfo() async throws {
        let sysinfo = try Self.load("sysinfo")
        let module = sysinfo.module
        XCTAssertEqual(module.abi_version, 1)
        XCTAssertEqual(Int(module.struct_size), MemoryLayout<rpcd_module>.stride)
        XCTAssertEqual(String(cString: module.name), "sysinfo")
        XCTAssertEqual(sysinfo.methodNames, ["hostname", "uptime", "loadavg"])
        XCTAssertEqual(sysinfo.method("uptime")?.flags, UInt32(RPCD_METHOD_MAY_BLOCK | RPCD_METHOD_READ_ONLY))
        XCTAssertEqual(sysinfo.method("hostname")?.flags, UInt32(RPCD_METHOD_READ_ONLY))
        XCTAssertEqual(Int(sysinfo.method("loadavg")?.struct_size ?? 0), MemoryLayout<rpcd_method>.stride)

        let instance = try sysinfo.start()
        defer { instance.deinitialize() }
        XCTAssertEqual(instance.logs.map(\.priority), [6])
        XCTAssertEqual(instance.logs.first?.message, "System information module ready")

        var name = [CChar](repeating: 0, count: 256)
        XCTAssertEqual(gethostname(&name, name.count), 0)
        let expected = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        try await instance.expectResult("hostname", nil, .string(expected))

        // MAY_BLOCK: answered before call() returns.
        let uptimeCall = instance.send("uptime")
        let uptime = try XCTUnwrap(TestHost.shared.replies(uptimeCall).first)
        XCTAssertGreaterThan(uptime.resultValue?.doubleValue ?? -1, 0, "\(uptime)")

        let load = try await instance.call("loadavg", "[]")
        XCTAssertEqual(load.resultValue?.arrayValue?.compactMap(\.doubleValue).count, 3, "\(load)")

        try await instance.expect(
            "hostname", "[1]",
            .error(code: -32602, message: "Invalid params", data: #"{"detail":"this method takes no parameters"}"#))
    }
}
