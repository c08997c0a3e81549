import Foundation
import RPCJSON
import RPCTestSupport
import XCTest

/// The example modules (built by this package) loaded by the real daemon through handlers.d.
final class ModuleIntegrationTests: XCTestCase {
    private var handlers: HandlersDirectory!

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
    }

    override func tearDown() {
        handlers = nil
    }

    /// The JSON-RPC 2.0 specification's examples (section 7), `subtract` mapped to calc.subtract,
    /// `sum` to calc.sum, `update`/`notify_*` to echo.echo, `get_data` to echo.echo with params.
    func testSpecificationExamplesOverTheWire() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc", "echo"], handlers: handlers))
        let c = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try c.call(#"{"jsonrpc": "2.0", "method": "calc.subtract", "params": [42, 23], "id": 1}"#)["result"]?.doubleValue, 19)
        XCTAssertEqual(try c.call(#"{"jsonrpc": "2.0", "method": "calc.subtract", "params": [23, 42], "id": 2}"#)["result"]?.doubleValue, -19)
        XCTAssertEqual(try c.call(#"{"jsonrpc": "2.0", "method": "calc.subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#)["result"]?.doubleValue, 19)
        XCTAssertEqual(try c.call(#"{"jsonrpc": "2.0", "method": "calc.subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}"#)["id"], 4)
        // Notifications: no reply; the next reply is for the next request.
        try c.sendFrame(#"{"jsonrpc": "2.0", "method": "echo.echo", "params": [1,2,3,4,5]}"#)
        try c.sendFrame(#"{"jsonrpc": "2.0", "method": "calc.foobar"}"#)
        let missing = try c.call(#"{"jsonrpc": "2.0", "method": "calc.foobar", "id": "1"}"#)
        XCTAssertEqual(missing["error"]?["code"], -32601)
        XCTAssertEqual(missing["id"], "1")
        XCTAssertEqual(try c.call(#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#)["error"]?["code"], -32700)
        XCTAssertEqual(try c.call(#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#)["error"]?["code"], -32600)
        XCTAssertEqual(try c.call("[]")["error"]?["code"], -32600)
        XCTAssertEqual(try c.call("[1,2,3]").arrayValue?.count, 3)
        let batch = try c.call(#"""
            [
             {"jsonrpc": "2.0", "method": "calc.sum", "params": [1,2,4], "id": "1"},
             {"jsonrpc": "2.0", "method": "echo.echo", "params": [7]},
             {"jsonrpc": "2.0", "method": "calc.subtract", "params": [42,23], "id": "2"},
             {"foo": "boo"},
             {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
             {"jsonrpc": "2.0", "method": "echo.echo", "params": ["hello", 5], "id": "9"}
            ]
            """#)
        let replies = try XCTUnwrap(batch.arrayValue)
        XCTAssertEqual(replies.count, 5)
        XCTAssertEqual(replies.first { $0["id"] == "1" }?["result"]?.doubleValue, 7)
        XCTAssertEqual(replies.first { $0["id"] == "2" }?["result"]?.doubleValue, 19)
        XCTAssertEqual(replies.first { $0["id"] == "5" }?["error"]?["code"], -32601)
        XCTAssertEqual(replies.first { $0["id"] == "9" }?["result"], ["hello", 5])
        XCTAssertEqual(replies.first { $0["id"] == .null }?["error"]?["code"], -32600)
        try c.sendFrame(#"[{"jsonrpc": "2.0", "method": "echo.echo", "params": [1,2,4]},{"jsonrpc": "2.0", "method": "echo.echo", "params": [7]}]"#)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":10}"#)["id"], 10, "the all-notification batch got no reply")
    }

    func testEveryExampleModuleServes() throws {
        let kvFile = handlers.stateDirectory + "/kv.json"
        try handlers.write("kv", "[Handler]\nModule=kv\nReadWritePaths=\(handlers.stateDirectory)\n[Config]\nFile=\(kvFile)\n")
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc", "echo", "sysinfo"], handlers: handlers))
        let c = try RawConnection(daemon.tcpEndpoint)
        let divide = try c.call(#"{"jsonrpc":"2.0","method":"calc.divide","params":[1,0],"id":1}"#)
        XCTAssertEqual(divide["error"]?["message"], "Division by zero")
        XCTAssertNotNil(divide["error"]?["data"])
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"calc.multiply","params":{"a":6,"b":7},"id":1}"#)["result"]?.doubleValue, 42)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"calc.add","params":["x",1],"id":1}"#)["error"]?["code"], -32602)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"echo.sleep","params":[10],"id":1}"#)["error"], nil)
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"sysinfo.hostname","id":1}"#)["result"]?.stringValue,
                       String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        XCTAssertGreaterThan(try c.call(#"{"jsonrpc":"2.0","method":"sysinfo.uptime","id":1}"#)["result"]?.doubleValue ?? 0, 0)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"sysinfo.loadavg","id":1}"#)["result"]?.arrayValue?.count, 3)
        // State-changing: over the Unix socket, as an administrator (the shipped access rules).
        let admin = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try admin.call(#"{"jsonrpc":"2.0","method":"kv.set","params":{"key":"a","value":{"n":[1]}},"id":1}"#)["error"], nil)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"kv.get","params":["a"],"id":1}"#)["result"], ["n": [1]])
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"kv.get","params":["zz"],"id":1}"#)["error"]?["data"]?["key"], "zz")
        XCTAssertEqual(daemon.terminate(), 0, daemon.stderr)

        // The store survives a restart through its File=.
        let again = try DaemonProcess(DaemonOptions(handlers: handlers))
        let c2 = try RawConnection(again.tcpEndpoint)
        XCTAssertEqual(try c2.call(#"{"jsonrpc":"2.0","method":"kv.list","id":1}"#)["result"], ["a"])
    }

    /// Isolated and in-process alike: parameters and the result named as `@RPCMethod(result:)` declares them
    /// (across the ABI's `result_name`, and the module link).
    func testDiscoverDescribesModuleMethods() throws {
        for isolation in ["process", "none"] {
            try handlers.write("calc", "[Handler]\nModule=calc\nIsolation=\(isolation)\n")
            try handlers.write("echo", "[Handler]\nModule=echo\nIsolation=\(isolation)\n")
            let daemon = try DaemonProcess(DaemonOptions(handlers: handlers))
            let document = try RawConnection(daemon.tcpEndpoint).call(#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#)["result"]
            func method(_ name: String) -> JSONValue? { document?["methods"]?.arrayValue?.first { $0["name"] == .string(name) } }
            let subtract = method("calc.subtract")
            XCTAssertEqual(subtract?["params"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["minuend", "subtrahend"])
            XCTAssertEqual(subtract?["result"]?["name"], "difference", "Isolation=\(isolation)")
            // Methods that declare no params yet take some say so (issue 40): a list by position, or anything as
            // sent; one that takes none, or declares its params, has no x-rpcd-params.
            XCTAssertEqual(method("calc.sum")?["x-rpcd-params"], ["type": "array"], "Isolation=\(isolation)")
            XCTAssertEqual(method("echo.echo")?["x-rpcd-params"], [:], "Isolation=\(isolation)")
            XCTAssertNil(subtract?["x-rpcd-params"])
            XCTAssertNil(method("echo.sleep")?["x-rpcd-params"])
            let calc = document?["x-rpcd-services"]?.arrayValue?.first { $0["name"] == "calc" }
            XCTAssertEqual(calc?["fingerprint"]?.stringValue?.count, 16)
        }
    }

    /// A module directory of the test's own: `calc` (a symlink to the built one) beside `files`.
    private func moduleDirectory(_ files: [String: String]) throws -> URL {
        let modules = handlers.url.appendingPathComponent("modules")
        try FileManager.default.createDirectory(at: modules, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: modules.appendingPathComponent("libcalc.so"),
            withDestinationURL: DaemonProcess.productsDirectory.appendingPathComponent("libcalc.so"))
        for (name, text) in files { try text.write(to: modules.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return modules
    }

    func testBrokenModuleDisablesOnlyItsHandler() throws {
        let modules = try moduleDirectory(["broken.so": "not an ELF file"])
        try handlers.write("broken", "[Handler]\nModule=broken\nService=broken\n")
        try handlers.write("missing", "[Handler]\nModule=missing\nService=missing\n")
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc"], handlers: handlers, moduleDirectory: modules))
        try daemon.waitForLog(matching: "module \(NSRegularExpression.escapedPattern(for: modules.path))/broken.so refused: dlopen failed")
        try daemon.waitForLog(matching: "module \(NSRegularExpression.escapedPattern(for: modules.path))/missing.so refused: no such file")
        let c = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"broken.anything","id":1}"#)["error"]?["code"], -32005)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"calc.add","params":[1,1],"id":1}"#)["result"]?.doubleValue, 2)
        // A caller learns why only when it is an administrator (root on the Unix socket); others, the service
        // alone: the reason names files and paths (issue 40).
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"broken.anything","id":2}"#)["error"]?["data"], ["service": "broken"])
        let administrator = try RawConnection(.unix(path: daemon.socketPath))
        let told = try administrator.call(#"{"jsonrpc":"2.0","method":"broken.anything","id":3}"#)["error"]?["data"]
        XCTAssertEqual(told?["reason"], "refused")
        XCTAssertEqual(told?["handler"], "broken")
        let detail = told?["detail"]?.stringValue ?? ""
        XCTAssertTrue(detail.contains("(\(handlers.path("broken.conf")):2) refused:") && detail.contains("dlopen failed"), detail)
    }

    /// A module others could have written is not loaded, nor one in a directory others can write (issue 14,
    /// module trust, like OpenSSH's StrictModes); the rest is served.
    func testModulesOthersCanWriteAreRefused() throws {
        let modules = try moduleDirectory([:])
        let writable = modules.appendingPathComponent("libecho.so")
        try FileManager.default.copyItem(at: DaemonProcess.productsDirectory.appendingPathComponent("libecho.so"), to: writable)
        chmod(writable.path, 0o666)
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc", "echo"], handlers: handlers, moduleDirectory: modules))
        try daemon.waitForLog(matching: "module \(NSRegularExpression.escapedPattern(for: writable.path)) refused: \(NSRegularExpression.escapedPattern(for: writable.path)) is writable by group or others \\(mode 666\\)")
        let c = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"echo.echo","params":[1],"id":1}"#)["error"]?["code"], -32005)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"calc.add","params":[1,1],"id":1}"#)["result"]?.doubleValue, 2)

        chmod(writable.path, 0o644)
        chmod(modules.path, 0o777)
        let again = try DaemonProcess(DaemonOptions(modules: ["calc", "echo"], handlers: handlers, moduleDirectory: modules))
        try again.waitForLog(matching: "\(NSRegularExpression.escapedPattern(for: modules.path)) is writable by group or others \\(mode 777\\)")
    }

    func testReloadUnderLoadLosesNoCallToServicesThatStayed() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc", "echo"], handlers: handlers))
        let endpoint = daemon.tcpEndpoint!
        let failures = Counter()
        let answered = Counter()
        let stop = Counter()
        let clients = DispatchGroup()
        let warmedUp = DispatchSemaphore(value: 0)
        for client in 0..<4 {
            clients.enter()
            Thread.detachNewThread {
                defer { clients.leave() }
                guard let connection = try? RawConnection(endpoint) else { return failures.add() }
                // Bounded: at most 20,000 calls per client, and it stops once the reloads are done.
                for n in 0..<20_000 where stop.value == 0 {
                    let reply = try? connection.call(#"{"jsonrpc":"2.0","method":"calc.add","params":[\#(client),\#(n)],"id":\#(n)}"#)
                    if reply?["result"]?.doubleValue == Double(client + n) { answered.add() } else { failures.add() }
                    if n == 200 { warmedUp.signal() }
                }
            }
        }
        XCTAssertEqual(warmedUp.wait(timeout: .now() + 60), .success, "the load is running")
        // Three reloads while the load runs: add kv, remove echo, change calc's Timeout= (a new instance).
        try handlers.write("kv", "[Handler]\nModule=kv\n")
        XCTAssertTrue(try daemon.reload().contains("Reloaded"))
        try handlers.remove("echo")
        XCTAssertTrue(try daemon.reload().contains("Reloaded"))
        try handlers.write("calc", "[Handler]\nModule=calc\nTimeout=10s\n")
        XCTAssertTrue(try daemon.reload().contains("Reloaded"))
        stop.add()
        XCTAssertEqual(clients.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(failures.value, 0, "no call to calc failed across reloads")
        XCTAssertGreaterThan(answered.value, 0)

        let c = try RawConnection(endpoint)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"kv.list","id":1}"#)["result"], [])
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"echo.echo","params":[1],"id":1}"#)["error"]?["code"], -32601)
    }

    func testBrokenConfigurationOnReloadKeepsTheOldOneServing() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc"], handlers: handlers))
        let c = try RawConnection(daemon.tcpEndpoint)
        try handlers.write("calc", "[Handler]\nModule=calc\nTimeout=whenever\n")
        let outcome = try daemon.reload()
        XCTAssertTrue(outcome.contains("Reload failed"), outcome)
        XCTAssertTrue(outcome.contains("calc.conf:3"), outcome)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"calc.add","params":[2,2],"id":1}"#)["result"]?.doubleValue, 4)
    }

    /// `rpcctl reload` (what `systemctl reload` runs) returns when the reload is over, with its outcome: the
    /// services now served, or exit status 1 and the reason when the previous configuration keeps serving.
    func testRpcctlReloadWaitsForTheOutcomeAndFailsWhenRefused() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc"], handlers: handlers))
        try handlers.write("kv", "[Handler]\nModule=kv\n")
        let good = try DaemonProcess.runTool("rpcctl", ["reload", "--address", daemon.socketPath])
        XCTAssertEqual(good.status, 0, good.stderr)
        XCTAssertEqual(good.stdout, "reloaded; serving calc, kv\n")
        // Served already: the reload was over when rpcctl returned.
        let c = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"kv.list","id":1}"#)["result"], [])

        try handlers.write("calc", "[Handler]\nModule=calc\nTimeout=whenever\n")
        let bad = try DaemonProcess.runTool("rpcctl", ["reload", "--address", daemon.socketPath])
        XCTAssertEqual(bad.status, 1, bad.stdout)
        XCTAssertTrue(bad.stderr.contains("Reload failed (-32013)"), bad.stderr)
        XCTAssertTrue(bad.stderr.contains("calc.conf:3"), bad.stderr)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"calc.add","params":[2,2],"id":1}"#)["result"]?.doubleValue, 4)

        // A value the module declares and rpcd checks before init (in kv's module host): the rest of the reload
        // applies, the refused handler's previous instance keeps serving, and rpcctl fails naming the handler,
        // the file and line of the key, and the reason (issue 40).
        try handlers.write("calc", "[Handler]\nModule=calc\n")
        try handlers.write("kv", "[Handler]\nModule=kv\n[Config]\nMaxKeys=lots\n")
        try handlers.write("echo", "[Handler]\nModule=echo\n")
        let refused = try DaemonProcess.runTool("rpcctl", ["reload", "--address", daemon.socketPath])
        XCTAssertEqual(refused.status, 1, refused.stdout + refused.stderr)
        XCTAssertEqual(refused.stdout, "reloaded; serving calc, echo, kv\n")
        XCTAssertTrue(refused.stderr.contains("handler 'kv' (\(handlers.path("kv.conf")):4) refused:"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("invalid value 'lots' for MaxKeys=: expected an integer of at least 1"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("its previous instance keeps serving"), refused.stderr)
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"kv.list","id":1}"#)["result"], [])
        XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"echo.echo","params":[1],"id":1}"#)["result"], [1])
        // A key the module does not declare; --json prints the whole answer and fails all the same.
        try handlers.write("kv", "[Handler]\nModule=kv\n[Config]\nMaxKey=5\n")
        let typo = try DaemonProcess.runTool("rpcctl", ["reload", "--json", "--address", daemon.socketPath])
        XCTAssertEqual(typo.status, 1, typo.stdout + typo.stderr)
        let answer = try JSONValue(parsing: Array(typo.stdout.utf8))
        XCTAssertEqual(answer["refused"]?[0]?["handler"], "kv")
        XCTAssertEqual(answer["refused"]?[0]?["line"], 4)
        XCTAssertEqual(answer["refused"]?[0]?["previous_serves"], true)
        XCTAssertTrue(typo.stderr.contains("kv.conf:4) refused"), typo.stderr)

        // A peer without the right to change state may not reload.
        let tcp = try DaemonProcess.runTool("rpcctl", ["reload", "--address", "\(daemon.tcpEndpoint!)"])
        XCTAssertEqual(tcp.status, 1)
        XCTAssertTrue(tcp.stderr.contains("-32007"), tcp.stderr)
    }

    /// `rpcd --check-config` refuses a [Config] value the module declares and the value does not fit, naming
    /// the file and line, without running the module's init (issue 40, item 2).
    func testCheckConfigRefusesADeclaredValueThatDoesNotFit() throws {
        try handlers.write("kv", "[Handler]\nModule=kv\n[Config]\nMaxKeys=lots\n")
        let result = try DaemonProcess.runTool("rpcd", [
            "--listen", "127.0.0.1:1", "--handlers-dir", handlers.path, "--module-dir", DaemonProcess.productsDirectory.path,
            "--check-config",
        ])
        XCTAssertEqual(result.status, 78, result.stdout + result.stderr)
        let output = result.stdout + result.stderr
        XCTAssertTrue(output.contains("\(handlers.path("kv.conf")):4: invalid value 'lots' for MaxKeys=: expected an integer of at least 1"), output)
        try handlers.write("kv", "[Handler]\nModule=kv\n[Config]\nMaxKeys=0\n")
        let zero = try DaemonProcess.runTool("rpcd", [
            "--listen", "127.0.0.1:1", "--handlers-dir", handlers.path, "--module-dir", DaemonProcess.productsDirectory.path,
            "--check-config",
        ])
        XCTAssertEqual(zero.status, 78, zero.stdout + zero.stderr)
        try handlers.write("kv", "[Handler]\nModule=kv\n[Config]\nMaxKeys=500\n")
        let good = try DaemonProcess.runTool("rpcd", [
            "--listen", "127.0.0.1:1", "--handlers-dir", handlers.path, "--module-dir", DaemonProcess.productsDirectory.path,
            "--check-config",
        ])
        XCTAssertEqual(good.status, 0, good.stdout + good.stderr)
    }

    func testCheckConfigListsHandlersWithTheirFiles() throws {
        try handlers.write("calc", "[Handler]\nModule=calc\n")
        try FileManager.default.createSymbolicLink(
            atPath: handlers.path("echo.conf"), withDestinationPath: "/dev/null")
        let result = try DaemonProcess.runTool("rpcd", [
            "--listen", "127.0.0.1:1", "--handlers-dir", handlers.path, "--module-dir", DaemonProcess.productsDirectory.path,
            "--check-config",
        ])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("# \(handlers.path)/calc.conf"), result.stdout)
        XCTAssertTrue(result.stdout.contains("Module=calc"), result.stdout)
        XCTAssertTrue(result.stdout.contains("handler 'echo' masked by \(handlers.path)/echo.conf"), result.stdout)
    }
}

/// A thread-safe counter for load loops.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
