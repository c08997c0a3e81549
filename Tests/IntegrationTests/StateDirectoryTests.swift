import Foundation
import RPCJSON
import RPCTestSupport
import XCTest

/// `[Handler] StateDirectory=NAME` with a real rpcd: rpcd makes `ROOT/NAME` (the test support's `--state-dir`),
/// the handler's module or program may write it without a `ReadWritePaths=` line, and gets its path
/// (`host->state_directory`, `rpcd.start`'s `stateDirectory`); what it wrote there outlives reloads, host restarts
/// and rpcd restarts.
final class StateDirectoryTests: XCTestCase {
    private var handlers: HandlersDirectory!

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
    }

    override func tearDown() {
        handlers = nil
    }


    /// Where `StateDirectory=NAME` is for daemons reading `handlers`.
    private func stateDirectory(_ name: String) -> String {
        DaemonProcess.stateRoot(handlers: handlers.url).appendingPathComponent(name).path
    }

    private func faulty(_ extra: String) -> DaemonOptions {
        DaemonOptions(handlerFiles: ["faulty": "[Handler]\nModule=faulty\nStateDirectory=faulty\n\(extra)"], handlers: handlers)
    }

    func testAnIsolatedModuleKeepsItsFilesThroughReloadsHostRestartsAndRpcdRestarts() throws {
        var daemon: DaemonProcess? = try DaemonProcess(faulty(""))
        var c = try RawConnection(daemon!.tcpEndpoint)
        let path = stateDirectory("faulty")
        XCTAssertEqual(try c.call(requestText("faulty.state_directory", id: 1))["result"], .string(path), "host->state_directory")
        var info = stat()
        XCTAssertEqual(lstat(path, &info), 0)
        XCTAssertEqual(info.st_uid, geteuid(), "rpcd's user owns it")
        XCTAssertEqual(info.st_mode & 0o707, 0o700, "nobody else's (the group bits are the ACL mask when rpcd gave it to the host's user)")
        XCTAssertEqual(try c.call(requestText("faulty.write", id: 2, params: #"["\#(path)/kept"]"#))["result"], true, "writable without ReadWritePaths=")
        XCTAssertEqual(try c.call(requestText("faulty.write", id: 3, params: #"["\#(handlers.path)/beside"]"#))["result"], false, "and nothing beside it")

        // A reload that changes the handler starts a new host.
        try handlers.write("faulty", "[Handler]\nModule=faulty\nStateDirectory=faulty\nTimeout=5s\n")
        XCTAssertTrue(try daemon!.reload().contains("Reloaded"))
        XCTAssertEqual(try c.call(requestText("faulty.read", id: 4, params: #"["\#(path)/kept"]"#))["result"], true, "after a reload")
        // A crash restarts the host.
        _ = try c.call(requestText("faulty.crash", id: 5))
        try daemon!.waitForLog(matching: "Module host restarted")
        XCTAssertEqual(try c.call(requestText("faulty.read", id: 6, params: #"["\#(path)/kept"]"#))["result"], true, "after a host restart")
        XCTAssertEqual(try c.call(requestText("faulty.write", id: 7, params: #"["\#(path)/again"]"#))["result"], true)
        // rpcd itself restarts.
        daemon = nil
        daemon = try DaemonProcess(faulty(""))
        c = try RawConnection(daemon!.tcpEndpoint)
        XCTAssertEqual(try c.call(requestText("faulty.read", id: 8, params: #"["\#(path)/kept"]"#))["result"], true, "after rpcd restarts")
        XCTAssertEqual(try c.call(requestText("faulty.write", id: 9, params: #"["\#(path)/kept"]"#))["result"], true, "and stays writable")
    }

    func testAHandlerWithoutOneGetsNull() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["faulty": "[Handler]\nModule=faulty\n"], handlers: handlers))
        let c = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try c.call(requestText("faulty.state_directory", id: 1))["result"], .null)
    }

    /// In rpcd itself the module writes with rpcd's rights: the directory is still made and handed over.
    func testAnInProcessModuleGetsItsDirectoryToo() throws {
        let daemon = try DaemonProcess(faulty("Isolation=none\n"))
        let c = try RawConnection(daemon.tcpEndpoint)
        let path = stateDirectory("faulty")
        XCTAssertEqual(try c.call(requestText("faulty.state_directory", id: 1))["result"], .string(path))
        XCTAssertEqual(try c.call(requestText("faulty.write", id: 2, params: #"["\#(path)/kept"]"#))["result"], true)
    }

    /// kv without `File=` keeps its store in `kv.json` of its state directory.
    func testKVKeepsItsStoreInItsStateDirectory() throws {
        let options = DaemonOptions(handlerFiles: ["kv": "[Handler]\nModule=kv\nStateDirectory=kv\n"], handlers: handlers)
        var daemon: DaemonProcess? = try DaemonProcess(options)
        var writer = try RawConnection(.unix(path: daemon!.socketPath))
        XCTAssertEqual(try writer.call(requestText("kv.set", id: 1, params: #"["k", 42]"#))["result"], true, daemon!.stderr)
        let stored = try JSONValue(parsing: String(contentsOfFile: stateDirectory("kv") + "/kv.json", encoding: .utf8))
        XCTAssertEqual(stored["k"], 42)
        daemon = nil
        daemon = try DaemonProcess(options)
        writer = try RawConnection(.unix(path: daemon!.socketPath))
        XCTAssertEqual(try writer.call(requestText("kv.get", id: 2, params: #"["k"]"#))["result"], 42, "read back after a restart")
    }

    /// A program handler gets the path as `rpcd.start`'s `stateDirectory`, and may write it.
    func testAProgramHandlerGetsItInRpcdStart() throws {
        let programs = handlers.url.appendingPathComponent("programs")
        try FileManager.default.createDirectory(at: programs, withIntermediateDirectories: true)
        let program = programs.appendingPathComponent("state").path
        try #"""
            #!/bin/sh
            read -r start
            dir=$(printf '%s\n' "$start" | sed -n 's/.*"stateDirectory":"\([^"]*\)".*/\1/p')
            echo started > "$dir/started" || echo "<3>cannot write $dir" >&2
            echo '{"jsonrpc":"2.0","id":0,"result":{"protocol":1,"services":[{"name":"state","version":"1.0.0","summary":"Where its state is.","methods":[{"name":"where","summary":"Its state directory.","params":[],"result":{"name":"path","schema":{"type":"string"}},"readOnly":true}]}]}}'
            while read -r line; do
                id=${line#'{"jsonrpc":"2.0","id":'}
                id=${id%%,*}
                case $line in *'"method":"rpc.cancel"'*) continue ;; esac
                echo "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":\"$dir\"}"
            done

            """#.write(toFile: program, atomically: true, encoding: .utf8)
        chmod(program, 0o755)
        let daemon = try DaemonProcess(DaemonOptions(
            handlerFiles: ["state": "[Handler]\nExec=\(program)\nStateDirectory=state\nReadWritePaths=\(handlers.stateDirectory)\n"],
            handlers: handlers))
        let c = try RawConnection(daemon.tcpEndpoint)
        let path = stateDirectory("state")
        XCTAssertEqual(try c.call(requestText("state.where", id: 1, params: "{}"))["result"], .string(path), "StateDirectory=, not ReadWritePaths=")
        XCTAssertEqual(try String(contentsOfFile: path + "/started", encoding: .utf8), "started\n")
    }
}
