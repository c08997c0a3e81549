import Foundation
import RPCJSON
import RPCTestSupport
import XCTest

/// Whatever an administrator does to a loaded module's file — `cp` over it, truncate it, remove it, install a
/// new one — and then reloads, with calls running: rpcd never crashes, the other services never notice, and
/// the handler serves the new file or is refused by name (issue 28). rpcd maps every module from a sealed
/// private copy (`ModuleLoader`); mapping the file itself crashed at the first call after a `cp` over it.
final class ModuleFileUpdateTests: XCTestCase {
    private var handlers: HandlersDirectory!

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
        try FileManager.default.createDirectory(at: handlers.url.appendingPathComponent("modules"), withIntermediateDirectories: true)
    }

    override func tearDown() { handlers = nil }

    func testSwiftModuleFileOperationsFollowedByReload() throws {
        try exercise(module: "calc", call: #"{"jsonrpc":"2.0","method":"calc.add","params":[1,2],"id":1}"#, expect: 3, other: "libecho.so")
    }

    func testCModuleFileOperationsFollowedByReload() throws {
        try exercise(
            module: "sysinfo", call: #"{"jsonrpc":"2.0","method":"sysinfo.loadavg","id":1}"#, expect: nil, other: "libcalc.so")
    }

    /// The same, with the modules inside rpcd itself (`Isolation=none`), where a file mapped as it was would
    /// take the daemon down.
    func testSwiftModuleFileOperationsFollowedByReloadInProcess() throws {
        try exercise(
            module: "calc", call: #"{"jsonrpc":"2.0","method":"calc.add","params":[1,2],"id":1}"#, expect: 3, other: "libecho.so",
            isolation: "none")
    }

    func testCModuleFileOperationsFollowedByReloadInProcess() throws {
        try exercise(
            module: "sysinfo", call: #"{"jsonrpc":"2.0","method":"sysinfo.loadavg","id":1}"#, expect: nil, other: "libcalc.so",
            isolation: "none")
    }

    /// `module` is loaded from a copy of its own in a module directory of the test's; `kv` is the bystander that
    /// must keep answering throughout. `other` is another module whose bytes are copied over `module`'s file.
    private func exercise(
        module: String, call: String, expect: Double?, other: String, isolation: String? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let modules = handlers.url.appendingPathComponent("modules")
        let library = modules.appendingPathComponent("lib\(module).so")
        let built = DaemonProcess.productsDirectory.appendingPathComponent("lib\(module).so")
        try FileManager.default.copyItem(at: built, to: library)
        try FileManager.default.copyItem(
            at: DaemonProcess.productsDirectory.appendingPathComponent("libkv.so"), to: modules.appendingPathComponent("libkv.so"))
        try handlers.writeModules([module, "kv"], isolation: isolation)
        let daemon = try DaemonProcess(DaemonOptions(handlers: handlers, moduleDirectory: modules))
        let endpoint = try XCTUnwrap(daemon.tcpEndpoint)
        XCTAssertTrue(try answers(RawConnection(endpoint).call(call), expect), "served before any change", file: file, line: line)

        // Calls to the module and to kv run throughout, on connections of their own. A crash closes them all.
        let stop = Counter()
        let brokenConnections = Counter()
        let bystanderFailures = Counter()
        let bystanderAnswers = Counter()
        let clients = DispatchGroup()
        for client in 0..<2 {
            clients.enter()
            Thread.detachNewThread {
                defer { clients.leave() }
                guard let connection = try? RawConnection(endpoint) else { return brokenConnections.add() }
                for n in 0..<100_000 where stop.value == 0 {
                    // Client 0 calls the module being changed (any JSON-RPC answer will do); client 1 calls kv.
                    let payload = client == 0 ? call : #"{"jsonrpc":"2.0","method":"kv.list","id":\#(n)}"#
                    guard let reply = try? connection.call(payload) else { return brokenConnections.add() }
                    if client == 1 {
                        if reply["result"] == nil { bystanderFailures.add() } else { bystanderAnswers.add() }
                    }
                }
            }
        }
        let c = try RawConnection(endpoint)
        func stillServing(_ step: String) throws {
            XCTAssertTrue(daemon.process.isRunning, "rpcd runs after \(step)", file: file, line: line)
            XCTAssertEqual(try c.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)["result"], "pong", step, file: file, line: line)
        }

        // 1. `cp other library` over the loaded file: the same inode, truncated and rewritten in place.
        let replacement = try Data(contentsOf: DaemonProcess.productsDirectory.appendingPathComponent(other))
        try overwriteInPlace(library, with: replacement)
        XCTAssertTrue(try answers(c.call(call), expect), "the loaded image is untouched by cp", file: file, line: line)
        _ = try daemon.reload()
        try stillServing("cp over the module and a reload")

        // 2. Truncated to nothing: refused on reload, by name.
        try overwriteInPlace(library, with: Data())
        _ = try daemon.reload()
        try stillServing("truncating the module and a reload")

        // 3. Removed.
        try FileManager.default.removeItem(at: library)
        _ = try daemon.reload()
        try stillServing("removing the module and a reload")
        try daemon.waitForLog(matching: "/\(module)\\.so refused: no such file")

        // 4. The documented update: a new file installed beside and renamed over (`install`), then reload.
        let staged = modules.appendingPathComponent(".lib\(module).so.new")
        try FileManager.default.copyItem(at: built, to: staged)
        XCTAssertEqual(rename(staged.path, library.path), 0)
        _ = try daemon.reload()
        try stillServing("installing the module again and a reload")
        XCTAssertTrue(try answers(c.call(call), expect), "served again from the new file", file: file, line: line)

        stop.add()
        XCTAssertEqual(clients.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(brokenConnections.value, 0, "no connection was lost", file: file, line: line)
        XCTAssertEqual(bystanderFailures.value, 0, "kv answered every call", file: file, line: line)
        XCTAssertGreaterThan(bystanderAnswers.value, 0, file: file, line: line)
    }

    /// What `cp` does to an existing file: open it for writing, truncate, write the new bytes (same inode).
    private func overwriteInPlace(_ url: URL, with data: Data) throws {
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: data)
        try handle.close()
    }

    private func answers(_ reply: JSONValue, _ expect: Double?) -> Bool {
        guard let result = reply["result"] else { return false }
        return expect.map { result.doubleValue == $0 } ?? true
    }
}
