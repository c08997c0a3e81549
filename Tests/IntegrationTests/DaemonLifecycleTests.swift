import Foundation
import RPCJSON
import RPCTestSupport
import XCTest

final class DaemonLifecycleTests: XCTestCase {
    func testSIGTERMLetsCallsInFlightFinish() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["echo"]))
        let connection = try RawConnection(daemon.tcpEndpoint)
        try connection.sendFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","params":[500],"id":1}"#)
        XCTAssertEqual(try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":0}"#)["id"], 0, "the sleep is in flight")
        kill(daemon.process.processIdentifier, SIGTERM)
        Self.assertGoingAway(try connection.receiveJSON(), lastID: 0, accepted: 2)
        XCTAssertEqual(try connection.receiveJSON()["result"], "done", "answered before the connection closes")
        XCTAssertTrue(connection.isClosedByPeer())
        XCTAssertEqual(daemon.waitForExit(), 0, daemon.stderr)
        XCTAssertThrowsError(try RawConnection(daemon.tcpEndpoint), "no longer listening")
    }

    /// `rpc.goingAway` (PROTOCOL.md "Shutdown"): the first `accepted` messages ran, the last of them with an id
    /// had `lastID`.
    private static func assertGoingAway(_ message: JSONValue, lastID: JSONValue, accepted: Int, line: UInt = #line) {
        XCTAssertEqual(message["method"], "rpc.goingAway", "\(message)", line: line)
        XCTAssertNil(message["id"], line: line)
        XCTAssertEqual(message["params"]?["lastId"], lastID, line: line)
        XCTAssertEqual(message["params"]?["accepted"], .number(Double(accepted)), line: line)
    }

    /// PROTOCOL.md "Shutdown": once rpcd is stopping, a frame it reads is not run but answered -32006, even on
    /// a connection whose call in flight keeps it open (issue 40: a ping 100 ms after SIGTERM was answered);
    /// the call in flight is.
    func testAFrameSentAfterStoppingBeganIsNotRun() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["echo"]))
        let connection = try RawConnection(daemon.tcpEndpoint)
        try connection.sendFrame(#"{"jsonrpc":"2.0","method":"echo.sleep","params":[1500],"id":1}"#)
        XCTAssertEqual(try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":0}"#)["id"], 0, "the sleep is in flight")
        kill(daemon.process.processIdentifier, SIGTERM)
        try daemon.waitForLog(matching: "Stopping: no new connections")
        // The listener closes first, then each connection is told to stop (NIO's quiescing helper, on the
        // connection's loop); only the first is visible from outside, so wait for it, then give the loop its
        // moment (the issue's client sent 100 ms after the signal).
        let deadline = Date().addingTimeInterval(10)
        while (try? RawConnection(daemon.tcpEndpoint)) != nil, Date() < deadline { usleep(10_000) }
        usleep(100_000)
        Self.assertGoingAway(try connection.receiveJSON(), lastID: 0, accepted: 2)
        try connection.sendFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":2}"#)
        let refused = try connection.receiveJSON()
        XCTAssertEqual(refused["id"], 2)
        XCTAssertEqual(refused["error"]?["code"], -32006, "the ping did not run")
        XCTAssertEqual(try connection.receiveJSON()["id"], 1, "the call in flight is answered")
        XCTAssertTrue(connection.isClosedByPeer())
        XCTAssertEqual(daemon.waitForExit(), 0, daemon.stderr)
    }

    /// PROTOCOL.md "Shutdown": a connection with nothing in flight is told what was accepted and closed at
    /// once.
    func testSIGTERMClosesAnIdleConnectionAfterSayingWhatWasAccepted() throws {
        let daemon = try DaemonProcess()
        let connection = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":0}"#)["result"], "pong")
        kill(daemon.process.processIdentifier, SIGTERM)
        Self.assertGoingAway(try connection.receiveJSON(), lastID: 0, accepted: 1)
        XCTAssertTrue(connection.isClosedByPeer())
        XCTAssertEqual(daemon.waitForExit(), 0)
    }

    /// `kill -HUP` while rpcd is still starting (its handlers loaded, its listeners not yet bound, its reload
    /// service not yet running) neither kills it (SIGHUP's default action) nor is lost: the reload runs once
    /// the daemon serves.
    func testSIGHUPWhileStartingIsAReloadOnceServing() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["echo"]), whileStarting: { daemon in
            try daemon.waitForLog(matching: "(Handler started)")
            kill(daemon.process.processIdentifier, SIGHUP)
        })
        XCTAssertNoThrow(try daemon.waitForLog(matching: "(Reloaded)"), daemon.stderr)
        let connection = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":0}"#)["result"], "pong")
        XCTAssertTrue(daemon.process.isRunning)
    }

    func testListenWithoutAConfigFile() throws {
        let port = try freePort()
        let daemon = try DaemonProcess(DaemonOptions(arguments: ["--listen", "127.0.0.1:\(port)"]))
        try daemon.waitForLog(matching: "rpcd_listener=127.0.0.1:\(port)")
        let connection = try RawConnection(.tcp(host: "127.0.0.1", port: port))
        XCTAssertEqual(try connection.call(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)["result"], "pong")
        XCTAssertEqual(daemon.terminate(), 0)
    }

    func testConfigErrorsNameFileAndLineAndExitWithConfigStatus() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-conf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("rpcd.conf").path
        try "[Server]\n# comment\nMaxFrameSize=lots\n".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try DaemonProcess.runTool("rpcd", ["--config", path, "--check-config"])
        XCTAssertEqual(result.status, 78)
        XCTAssertTrue(result.stderr.contains("\(path):3"), result.stderr)
        XCTAssertTrue(result.stderr.contains("MaxFrameSize"), result.stderr)
    }

    func testCheckConfigPrintsTheEffectiveConfiguration() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-conf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("rpcd.conf.d"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("rpcd.conf").path
        try "[Server]\nListen=127.0.0.1:1\nMaxBatchLength=10\n".write(toFile: path, atomically: true, encoding: .utf8)
        try "[Server]\nMaxBatchLength=20\n".write(
            to: directory.appendingPathComponent("rpcd.conf.d/50-batch.conf"), atomically: true, encoding: .utf8)
        let result = try DaemonProcess.runTool("rpcd", ["--config", path, "--check-config"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("MaxBatchLength=20"), result.stdout)
        XCTAssertTrue(result.stdout.contains("Listen=127.0.0.1:1"), result.stdout)
    }

    /// A temporary directory with an rpcd.conf and an empty handlers.d, and `rpcd --check-config` run on them
    /// with the built modules.
    private func checkConfigSetUp() throws -> (
        directory: URL, handlers: URL, check: () throws -> (status: Int32, stdout: String, stderr: String)
    ) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-conf-\(UUID().uuidString)")
        let handlers = directory.appendingPathComponent("handlers.d")
        try FileManager.default.createDirectory(at: handlers, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("rpcd.conf").path
        try "[Server]\nListen=127.0.0.1:1\n".write(toFile: path, atomically: true, encoding: .utf8)
        return (directory, handlers, {
            try DaemonProcess.runTool("rpcd", [
                "--config", path, "--check-config", "--handlers-dir", handlers.path,
                "--module-dir", DaemonProcess.productsDirectory.path,
            ])
        })
    }

    /// `--check-config` fails, as rpcd would refuse them, on two enabled handlers for one service, and on a
    /// misspelled `[config]` section, which gets a "did you mean" like a misspelled key.
    func testCheckConfigFailsOnTwoHandlersForOneServiceAndAMisspelledSection() throws {
        let (directory, handlers, check) = try checkConfigSetUp()
        defer { try? FileManager.default.removeItem(at: directory) }
        try "[Handler]\nModule=calc\n".write(to: handlers.appendingPathComponent("calc.conf"), atomically: true, encoding: .utf8)
        XCTAssertEqual(try check().status, 0)
        try "[Handler]\nModule=calc\n".write(to: handlers.appendingPathComponent("sums.conf"), atomically: true, encoding: .utf8)
        let twice = try check()
        XCTAssertEqual(twice.status, 78, twice.stdout)
        XCTAssertTrue(twice.stdout.contains("service 'calc' of handler 'sums' is already served by handler 'calc'"), twice.stdout)
        try "[Handler]\nModule=calc\nService=sums\n\n[config]\nX=1\n".write(
            to: handlers.appendingPathComponent("sums.conf"), atomically: true, encoding: .utf8)
        let misspelled = try check()
        XCTAssertEqual(misspelled.status, 78, misspelled.stdout)
        XCTAssertTrue(misspelled.stdout.contains("unknown section [config]; did you mean [Config]?"), misspelled.stdout)
    }

    /// A `[Config]` key the module does not declare (kv declares File=, MaxKeys=, MaxBytes=) fails
    /// `--check-config` as a misspelled `[Handler]` key does: file, line and "did you mean".
    func testCheckConfigReportsAConfigKeyTheModuleDoesNotDeclare() throws {
        let (directory, handlers, check) = try checkConfigSetUp()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kv = handlers.appendingPathComponent("kv.conf")
        try "[Handler]\nModule=kv\n[Config]\nMaxKeys=5\nX-Note=ignored\n".write(to: kv, atomically: true, encoding: .utf8)
        XCTAssertEqual(try check().status, 0)
        try "[Handler]\nModule=kv\n[Config]\nMaxKyes=5\n".write(to: kv, atomically: true, encoding: .utf8)
        let typo = try check()
        XCTAssertEqual(typo.status, 78, typo.stdout)
        XCTAssertTrue(
            typo.stdout.contains("\(kv.path):4: unknown key 'MaxKyes' in section [Config]; did you mean 'MaxKeys'?"),
            typo.stdout)
    }

    /// `--check-config` never runs a module's code in its own process: each module is loaded in a module host
    /// (sandboxed, not initialised), so a library that crashes while it loads is reported by name, with the
    /// signal, and the check goes on to the next handler.
    func testCheckConfigLoadsModulesInAModuleHostNotItself() throws {
        let (directory, handlers, _) = try checkConfigSetUp()
        defer { try? FileManager.default.removeItem(at: directory) }
        try "[Handler]\nModule=calc\n".write(to: handlers.appendingPathComponent("calc.conf"), atomically: true, encoding: .utf8)
        try "[Handler]\nModule=faulty\n".write(to: handlers.appendingPathComponent("faulty.conf"), atomically: true, encoding: .utf8)
        let arguments = [
            "--config", directory.appendingPathComponent("rpcd.conf").path, "--check-config", "--handlers-dir", handlers.path,
            "--module-dir", DaemonProcess.productsDirectory.path,
        ]
        let fine = try DaemonProcess.runTool("rpcd", arguments)
        XCTAssertEqual(fine.status, 0, fine.stdout + fine.stderr)
        XCTAssertTrue(fine.stdout.contains("libfaulty.so: faulty 1.0.0, 20 methods"), fine.stdout)

        var environment = ProcessInfo.processInfo.environment
        environment["RPCD_FAULTY_LOAD"] = "crash"
        let crashing = try DaemonProcess.runTool("rpcd", arguments, environment: environment)
        XCTAssertEqual(crashing.status, 78, "rpcd --check-config itself survives: \(crashing.stdout) \(crashing.stderr)")
        XCTAssertTrue(crashing.stdout.contains("libfaulty.so refused: its module host ended (SIGSEGV) while it loaded the module"), crashing.stdout)
        XCTAssertTrue(crashing.stdout.contains("libcalc.so: calc"), "the other handlers are still checked: \(crashing.stdout)")
    }

    func testBindFailureIsReportedWithTheAddress() throws {
        let first = try DaemonProcess()
        let taken = first.tcpEndpoint!
        let second = try DaemonProcess(DaemonOptions(arguments: ["--listen", "\(taken)"]))
        XCTAssertNotEqual(second.waitForExit(), 0)
        XCTAssertTrue(second.stderr.contains("cannot listen on \(taken)"), second.stderr)
    }

    private func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length)
                return getsockname(fd, pointer, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
