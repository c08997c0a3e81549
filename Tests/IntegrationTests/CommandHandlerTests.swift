import Foundation
import RPCJSON
import RPCTestSupport
import XCTest

/// Command methods (`[Command]` in a handler file, docs/MODULES.md), run by a real rpcd in a module host of their
/// own: params become arguments with no shell, a failure is -32014 with the command's status and its standard
/// error, output past `MaxOutputSize=` is -32015, and what a command starts never outlives its call.
final class CommandHandlerTests: XCTestCase {
    private var handlers: HandlersDirectory!

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
    }

    override func tearDown() {
        handlers = nil
    }


    private static let tools = """
        [Handler]
        Service=tools
        [Command]
        Method=echo
        Description=Says the text back
        Exec=/bin/echo {text}
        Param=text
        ReadOnly=yes
        [Command]
        Method=list
        Exec=/bin/ls -1 -- {path}
        Param=path string /[a-z/]*
        Output=lines
        [Command]
        Method=count
        Exec=/usr/bin/printf '{{"n":%s}}' {n}
        Param=n integer
        Output=json
        [Command]
        Method=flood
        Exec=/usr/bin/yes
        MaxOutputSize=64K
        [Command]
        Method=sleep
        Exec=/bin/sleep {seconds}
        Param=seconds integer
        [Command]
        Method=detach
        Exec=/bin/sh -c "/bin/sleep 301 & echo started"

        """

    func testCommandsAreMethodsWhoseParamsAreArgumentsNeverShell() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["tools": Self.tools], handlers: handlers))
        let remote = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try remote.call(requestText("tools.echo", id: 1, params: #"["; rm -rf / $(id) `id`"]"#))["result"],
                       "; rm -rf / $(id) `id`", "one argument, no shell; ReadOnly=yes: a TCP peer may call it")
        XCTAssertEqual(try remote.call(requestText("tools.list", id: 1, params: #"["/"]"#))["error"]?["code"], -32007,
                       "the access rules apply: a method that is not ReadOnly= is for local callers by default")
        let caller = try RawConnection(.unix(path: daemon.socketPath))
        let option = try caller.call(requestText("tools.echo", id: 2, params: #"{"text":"-e"}"#))
        XCTAssertEqual(option["error"]?["code"], -32602, "\(option)")
        XCTAssertEqual(try caller.call(requestText("tools.echo", id: 3, params: #"{"text":"a","extra":1}"#))["error"]?["code"], -32602)
        XCTAssertEqual(try caller.call(requestText("tools.count", id: 4, params: "[7]"))["result"], ["n": 7])
        let listed = try caller.call(requestText("tools.list", id: 5, params: #"["/etc"]"#))
        XCTAssertEqual(listed["result"]?.arrayValue?.contains("passwd"), true, "\(listed)")
        let outside = try caller.call(requestText("tools.list", id: 5, params: #"["/root"]"#))
        XCTAssertEqual(outside["error"]?["code"], -32014, "the module sandbox applies to commands: \(outside)")
        XCTAssertEqual(try caller.call(requestText("tools.list", id: 6, params: #"["/../etc"]"#))["error"]?["code"], -32602, "its pattern")

        let failed = try caller.call(requestText("tools.list", id: 7, params: #"["/nonexistent"]"#))
        XCTAssertEqual(failed["error"]?["code"], -32014, "\(failed)")
        XCTAssertEqual(failed["error"]?["data"]?["exit_status"], 2)
        XCTAssertTrue(failed["error"]?["data"]?["stderr"]?.stringValue?.contains("No such file") ?? false, "\(failed)")

        let flood = try caller.call(requestText("tools.flood", id: 8))
        XCTAssertEqual(flood["error"]?["code"], -32015, "\(flood)")
        XCTAssertEqual(flood["error"]?["data"]?["limit"], 65536)

        let discovered = try caller.call(requestText("rpc.discover", id: 9))
        XCTAssertTrue("\(discovered)".contains("Says the text back"), "\(discovered)")
        XCTAssertEqual(try caller.call(requestText("rpcd.ping", id: 10))["result"], "pong")
    }

    /// A command's descendants end with it; a cancelled or timed-out call kills the command's whole group.
    func testNothingACommandStartsOutlivesItsCall() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["tools": Self.tools + "[Handler]\nTimeout=1s\n"], handlers: handlers))
        let caller = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try caller.call(requestText("tools.detach", id: 1))["result"], "started")
        let deadline = ContinuousClock.now + .seconds(3)
        while !ProcessTree.all(withCommandLine: "/bin/sleep 301 ").isEmpty, ContinuousClock.now < deadline { usleep(20_000) }
        XCTAssertEqual(ProcessTree.all(withCommandLine: "/bin/sleep 301 "), [], "the background sleep was killed with its group")

        let timedOut = try caller.call(requestText("tools.sleep", id: 2, params: "[60]"))
        XCTAssertEqual(timedOut["error"]?["code"], -32003, "\(timedOut)")
        XCTAssertTrue(waitUntilNoSleep(under: daemon), "Timeout= killed the command")

        try caller.sendFrame(requestText("tools.sleep", id: 3, params: "[60]"))
        usleep(200_000)
        XCTAssertFalse(ProcessTree.descendants(of: daemon.process.processIdentifier).filter { ProcessTree.commandLine($0).contains("sleep") }.isEmpty)
        try caller.sendFrame(#"{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":3}}"#)
        XCTAssertEqual(try caller.receiveJSON()["error"]?["code"], -32011)
        XCTAssertTrue(waitUntilNoSleep(under: daemon), "rpc.cancel killed the command")
        XCTAssertEqual(try caller.call(requestText("tools.echo", id: 4, params: #"["still here"]"#))["result"], "still here")
    }

    /// Commands that run long hold nothing the others need: each end is waited for on a thread of its own.
    func testLongCommandsDoNotHoldBackTheEndsOfOthers() throws {
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["tools": Self.tools], handlers: handlers))
        let sleeper = try RawConnection(.unix(path: daemon.socketPath))
        for id in 1...4 { try sleeper.sendFrame(requestText("tools.sleep", id: id, params: "[3]")) }
        usleep(300_000)
        let caller = try RawConnection(.unix(path: daemon.socketPath))
        let started = ContinuousClock.now
        XCTAssertEqual(try caller.call(requestText("tools.echo", id: 9, params: #"["quick"]"#))["result"], "quick")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2), "answered while four sleeps run")
    }

    /// A command that forks without end is bounded by `TasksMax=` (its host's user's process limit here, where
    /// there is no pids controller) and ends with its group: rpcd and other calls are untouched.
    func testAForkBombIsBoundedAndEndsWithItsCall() throws {
        try XCTSkipUnless(geteuid() == 0, "module hosts run as users of their own, which TasksMax= bounds, only where rpcd is root")
        let bomb = #"[Command]\#nMethod=bomb\#nExec=/bin/sh -c "b() {{ b | b & }}; b; sleep 1; echo done"\#n[Handler]\#nTasksMax=32\#n"#
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["tools": Self.tools, "bomb": bomb], handlers: handlers))
        let caller = try RawConnection(.unix(path: daemon.socketPath))
        let answer = try caller.call(requestText("bomb.bomb", id: 1))
        XCTAssertNotNil(answer["result"] ?? answer["error"], "\(answer)")
        let others = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try others.call(requestText("tools.echo", id: 2, params: #"["fine"]"#))["result"], "fine")
        let deadline = ContinuousClock.now + .seconds(5)
        var left: [pid_t] = []
        repeat {
            left = ProcessTree.all(withCommandLine: "/bin/sh -c b() { b | b & }; b; sleep 1; echo done ")
            if left.isEmpty { break }
            usleep(50_000)
        } while ContinuousClock.now < deadline
        XCTAssertEqual(left, [], "the bomb's processes were killed with its group")
    }

    func testABrokenCommandSectionIsRefusedNamingItsLine() throws {
        let daemon = try DaemonProcess(DaemonOptions(
            handlerFiles: [
                "bad": "[Handler]\n[Command]\nMethod=x\nExec=/bin/echo {nothing}\n",
                "missing": "[Handler]\n[Command]\nMethod=x\nExec=/nonexistent/tool\n",
            ],
            handlers: handlers))
        try daemon.waitForLog(matching: "bad.conf:4: .*placeholder \\{nothing\\} names no Param=")
        try daemon.waitForLog(matching: "missing.conf:2: \\[Command\\] x: /nonexistent/tool")
        let caller = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try caller.call(requestText("rpcd.ping", id: 1))["result"], "pong")
    }

    /// examples/command-handlers/units.conf, as MODULES.md installs it.
    func testTheExampleServesDiskUsageAndUnitStates() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let example = try String(contentsOf: root.appendingPathComponent("examples/command-handlers/units.conf"), encoding: .utf8)
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["units": example], handlers: handlers))
        let caller = try RawConnection(daemon.tcpEndpoint)
        let usage = try caller.call(requestText("units.diskUsage", id: 1, params: #"["/"]"#))
        XCTAssertEqual(usage["result"]?.arrayValue?.first?.stringValue?.hasPrefix("Filesystem"), true, "\(usage)")
        let state = try caller.call(requestText("units.isActive", id: 2, params: #"{"unit":"no-such-unit-here.service"}"#))
        XCTAssertNotNil(state["result"]?.stringValue ?? state["error"]?["data"]?["stderr"]?.stringValue, "\(state)")
        // Outside a system booted with systemd, systemctl says so on its standard error: -32014 carries it.
        XCTAssertEqual(try caller.call(requestText("units.isActive", id: 3, params: #"["ssh.service; reboot"]"#))["error"]?["code"], -32602)
    }

    private func waitUntilNoSleep(under daemon: DaemonProcess) -> Bool {
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            let sleeping = ProcessTree.descendants(of: daemon.process.processIdentifier).filter { ProcessTree.commandLine($0).contains("sleep") }
            if sleeping.isEmpty { return true }
            usleep(20_000)
        }
        return false
    }
}
