import Foundation
import RPCJSON
import RPCTestSupport
import XCTest

/// Program handlers (docs/HANDLER-PROTOCOL.md), run by a real rpcd inside the module sandbox: the shell example
/// of examples/program-handlers and the Python `notes` of examples/python-handler, with the `rpcd` package of
/// python/ beside it.
final class ProgramHandlerTests: XCTestCase {
    private var handlers: HandlersDirectory!
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
    }

    override func tearDown() {
        handlers = nil
    }


    /// Copies `file` of the checkout into the handlers directory's `programs/`, executable; returns its path.
    private func program(_ file: String, as name: String? = nil) throws -> String {
        let programs = handlers.url.appendingPathComponent("programs")
        try FileManager.default.createDirectory(at: programs, withIntermediateDirectories: true)
        let target = programs.appendingPathComponent(name ?? URL(fileURLWithPath: file).lastPathComponent)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: Self.root.appendingPathComponent(file), to: target)
        chmod(target.path, 0o755)
        return target.path
    }

    /// Writes `text` as the executable `name` in the handlers directory's `programs/`; returns its path.
    private func script(_ name: String, _ text: String) throws -> String {
        let programs = handlers.url.appendingPathComponent("programs")
        try FileManager.default.createDirectory(at: programs, withIntermediateDirectories: true)
        let target = programs.appendingPathComponent(name)
        try text.write(to: target, atomically: true, encoding: .utf8)
        chmod(target.path, 0o755)
        return target.path
    }

    /// The Python example with the package it imports, started through a wrapper that names where it is (the
    /// program's environment is rpcd's, not the test's).
    private func pythonNotes() throws -> String {
        let programs = handlers.url.appendingPathComponent("programs")
        let notes = try program("examples/python-handler/notes.py")
        let package = programs.appendingPathComponent("rpcd")
        try? FileManager.default.removeItem(at: package)
        try FileManager.default.copyItem(at: Self.root.appendingPathComponent("python/rpcd"), to: package)
        let wrapper = programs.appendingPathComponent("notes")
        try "#!/bin/sh\nPYTHONPATH=\(programs.path) exec /usr/bin/python3 \(notes)\n".write(to: wrapper, atomically: true, encoding: .utf8)
        chmod(wrapper.path, 0o755)
        return wrapper.path
    }

    func testAShellProgramIsAServiceThatIsDiscoveredCalledAndLogs() throws {
        let uptime = try program("examples/program-handlers/uptime.sh")
        let daemon = try DaemonProcess(DaemonOptions(handlerFiles: ["uptime": "[Handler]\nExec=\(uptime)\n"], handlers: handlers))
        let caller = try RawConnection(daemon.tcpEndpoint)
        let reply = try caller.call(requestText("uptime.seconds", id: 1))
        XCTAssertGreaterThan(try XCTUnwrap(reply["result"]?.doubleValue, "\(reply)"), 0)
        XCTAssertEqual(try caller.call(requestText("uptime.seconds", id: 2, params: #"{"extra":1}"#))["error"]?["code"], -32602,
                       "params the declaration does not have never reach the program")
        XCTAssertNotNil(try caller.call(requestText("uptime.seconds", id: 4))["result"], "and it serves on")
        let discovered = try caller.call(requestText("rpc.discover", id: 3))
        XCTAssertTrue("\(discovered)".contains("uptime.seconds"), "\(discovered)")
        try daemon.waitForLog(matching: "declared.*rpcd_handler=uptime")

        // A reload that changes the handler stops the program by closing its input: it ends by itself, at once.
        let first = try XCTUnwrap(ProcessTree.descendants(of: daemon.process.processIdentifier).first { ProcessTree.commandLine($0).contains("uptime.sh") })
        try handlers.write("uptime", "[Handler]\nExec=\(uptime)\nTimeout=5s\n")
        XCTAssertTrue(try daemon.reload().contains("Reloaded"))
        XCTAssertNotNil(try caller.call(requestText("uptime.seconds", id: 5))["result"])
        let deadline = ContinuousClock.now + .seconds(3)
        while kill(first, 0) == 0, ContinuousClock.now < deadline { usleep(20_000) }
        XCTAssertNotEqual(kill(first, 0), 0, "the old program ended within 3 s of the reload, before any SIGTERM")
    }

    func testAPythonProgramGetsItsParamsByNameEmitsEventsAndIsRestartedAfterACrash() throws {
        let notes = try pythonNotes()
        let daemon = try DaemonProcess(DaemonOptions(
            handlerFiles: ["notes": "[Handler]\nExec=\(notes)\n[Config]\nMaxNotes=2\n"], handlers: handlers))
        let subscriber = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertNotNil(try subscriber.call(requestText("rpc.subscribe", id: 1, params: #"["notes.added"]"#))["result"])
        let caller = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try caller.call(requestText("notes.add", id: 2, params: #"["milk"]"#))["result"], 1, "by position, bound to names")
        XCTAssertEqual(try caller.call(requestText("notes.add", id: 3, params: #"{"text":"eggs"}"#))["result"], 2)
        let full = try caller.call(requestText("notes.add", id: 4, params: #"{"text":"tea"}"#))
        XCTAssertEqual(full["error"]?["code"], 1001, "\(full)")
        XCTAssertEqual(full["error"]?["data"]?["limit"], 2)
        let event = try subscriber.receiveJSON()
        XCTAssertEqual(event["params"]?["event"], "notes.added", "\(event)")
        XCTAssertEqual(event["params"]?["data"]?["text"], "milk")
        XCTAssertEqual(try caller.call(requestText("notes.search", id: 5, params: #"{"word":"e"}"#))["result"], ["eggs"])
        XCTAssertEqual(try caller.call(requestText("notes.add", id: 6, params: "[5]"))["error"]?["code"], -32602, "checked against its schema")

        // The program killed: its host ends as it did, rpcd answers for it and starts it again.
        let programs = ProcessTree.descendants(of: daemon.process.processIdentifier).filter { ProcessTree.commandLine($0).contains("notes.py") }
        XCTAssertEqual(programs.count, 1)
        kill(programs[0], SIGKILL)
        try daemon.waitForLog(matching: "Module host restarted")
        XCTAssertEqual(try caller.call(requestText("notes.search", id: 7))["result"], [], "a new program, with nothing kept")
    }

    /// A program that leaves a call unanswered `Timeout=` after its `rpc.cancel` is hung: killed, and started
    /// again as after a crash (its host answers rpcd's pings for it, so they cannot tell).
    func testAProgramThatNeverAnswersIsKilledAsHungAndStartedAgain() throws {
        let silent = try script("silent.sh", #"""
            #!/bin/sh
            read -r start
            echo '{"jsonrpc":"2.0","id":0,"result":{"protocol":1,"services":[{"name":"silent","version":"1","methods":[{"name":"wait","params":[]}]}]}}'
            while read -r line; do :; done
            """#)
        let daemon = try DaemonProcess(DaemonOptions(
            handlerFiles: ["silent": "[Handler]\nExec=\(silent)\nTimeout=500ms\n"], handlers: handlers))
        let caller = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try caller.call(requestText("silent.wait", id: 1))["error"]?["code"], -32003)
        try daemon.waitForLog(matching: "it is hung; killing it")
        try daemon.waitForLog(matching: "Module host restarted")
        XCTAssertEqual(try caller.call(requestText("rpcd.ping", id: 2))["result"], "pong")
    }

    /// What a program emits is checked as params are: an event it does not declare, or whose payload fails its
    /// declared schema, is dropped; a message before its declaration refuses it.
    func testAProgramsEventsAreCheckedAgainstItsDeclaration() throws {
        let ticker = try script("ticker.sh", #"""
            #!/bin/sh
            read -r start
            echo '{"jsonrpc":"2.0","id":0,"result":{"protocol":1,"services":[{"name":"ticker","version":"1","methods":[{"name":"tick","params":[]}],"events":[{"name":"count","schema":{"type":"integer"}}]}]}}'
            while read -r line; do
                id=${line#'{"jsonrpc":"2.0","id":'}
                id=${id%%,*}
                echo '{"jsonrpc":"2.0","method":"rpc.event","params":{"event":"ticker.count","data":"many"}}'
                echo '{"jsonrpc":"2.0","method":"rpc.event","params":{"event":"ticker.other","data":1}}'
                echo '{"jsonrpc":"2.0","method":"rpc.event","params":{"event":"ticker.count","data":7}}'
                printf '{"jsonrpc":"2.0","id":%s,"result":true}\n' "$id"
            done
            """#)
        let early = try script(
            "early.sh", "#!/bin/sh\necho '{\"jsonrpc\":\"2.0\",\"method\":\"rpc.event\",\"params\":{\"event\":\"x.y\"}}'\nsleep 30\n")
        let daemon = try DaemonProcess(DaemonOptions(
            handlerFiles: ["ticker": "[Handler]\nExec=\(ticker)\n", "early": "[Handler]\nExec=\(early)\n"],
            handlers: handlers))
        try daemon.waitForLog(matching: "Handler refused.*before it declared itself")
        let subscriber = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertNotNil(try subscriber.call(requestText("rpc.subscribe", id: 1, params: #"["ticker.count"]"#))["result"])
        let caller = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try caller.call(requestText("ticker.tick", id: 2))["result"], true)
        // The events were written before the answer, in order: the one that passes is the only one delivered.
        let event = try subscriber.receiveJSON()
        XCTAssertEqual(event["params"]?["data"], 7, "\(event)")
        XCTAssertEqual(event["params"]?["seq"], 1)
        try daemon.waitForLog(matching: "payload does not match its declared schema")
        try daemon.waitForLog(matching: "an event it does not declare")
    }

    func testAProgramThatRefusesItsConfigurationIsRefusedWithItsReason() throws {
        let notes = try pythonNotes()
        let daemon = try DaemonProcess(DaemonOptions(
            modules: ["calc"], handlerFiles: ["notes": "[Handler]\nExec=\(notes)\n[Config]\nMaxNotes=lots\n"],
            handlers: handlers))
        try daemon.waitForLog(matching: "Handler refused.*MaxNotes")
        let caller = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try caller.call(requestText("notes.search", id: 1))["error"]?["code"], -32005)
        XCTAssertEqual(try caller.call(requestText("calc.add", id: 2, params: "[1,2]"))["result"], 3)
    }

    func testAProgramMustBeAnAbsolutePathToATrustedExecutable() throws {
        let text = try program("examples/program-handlers/uptime.sh", as: "writable.sh")
        chmod(text, 0o777)
        let daemon = try DaemonProcess(DaemonOptions(
            handlerFiles: ["writable": "[Handler]\nExec=\(text)\n", "relative": "[Handler]\nExec=uptime.sh\n"], handlers: handlers))
        try daemon.waitForLog(matching: "writable by group or others")
        try daemon.waitForLog(matching: "absolute path of the handler's program")
    }
}
