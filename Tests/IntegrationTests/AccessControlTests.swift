import Foundation
import RPCJSON
import RPCProtocol
import RPCTestSupport
import XCTest

/// The access rules against a real daemon, with the example modules: the shipped defaults, opening up with
/// one line, per-handler rules, peer credentials on the Unix socket, what rpc.discover shows, and how refusals
/// are answered, counted and logged (issue 8).
final class AccessControlTests: XCTestCase {
    private var handlers: HandlersDirectory!

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
        try handlers.writeModules(["calc", "kv"])
    }

    override func tearDown() {
        handlers = nil
    }

    private func call(_ connection: RawConnection, _ method: String, _ params: String = "[]") throws -> JSONValue {
        try connection.call(#"{"jsonrpc":"2.0","method":"\#(method)","params":\#(params),"id":1}"#)
    }

    /// An empty [Access] section keeps the shipped rules: Allow=user:root group:rpcd, AllowRead=local.
    func testShippedRulesLetLocalPeersReadAndOnlyAdministratorsChangeState() throws {
        let daemon = try DaemonProcess(DaemonOptions(access: "", handlers: handlers))
        let tcp = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try call(tcp, "calc.add", "[1, 2]")["result"], 3)
        XCTAssertEqual(try call(tcp, "kv.list")["result"], [])
        for (method, params) in [("kv.set", #"["a", 1]"#), ("kv.delete", #"["a"]"#), ("rpcd.setLogLevel", #"["debug"]"#)] {
            let reply = try call(tcp, method, params)
            XCTAssertEqual(reply["error"], ["code": -32007, "message": "Access denied", "data": ["method": .string(method)]], method)
        }
        XCTAssertEqual(try call(tcp, "rpcd.info")["result"]?["calls"]?["denied"], 3)

        if getuid() == 0 {  // root is an administrator by the shipped rules
            let admin = try RawConnection(.unix(path: daemon.socketPath))
            XCTAssertEqual(try call(admin, "kv.set", #"["a", 1]"#)["result"], true)
            XCTAssertEqual(try call(admin, "rpcd.setLogLevel", #"["info"]"#)["result"], "info")
        }
        XCTAssertTrue(try daemon.waitForLog(matching: "Started.*rpcd_exposure=\"?local only").contains("Started"))
    }

    /// rpc.discover lists only what the caller may call; fingerprints stay those of the whole service.
    func testDiscoverShowsACallerOnlyWhatItMayCall() throws {
        let daemon = try DaemonProcess(DaemonOptions(access: "", handlers: handlers))
        let document = try call(RawConnection(daemon.tcpEndpoint), "rpc.discover")["result"]
        let names = Set(document?["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
        XCTAssertTrue(names.isSuperset(of: ["calc.add", "kv.get", "kv.list", "rpcd.ping", "rpcd.info", "rpc.discover"]), "\(names)")
        XCTAssertTrue(names.isDisjoint(with: ["kv.set", "kv.delete", "rpcd.setLogLevel"]), "\(names)")
        XCTAssertEqual(document?["methods"]?.arrayValue?.first { $0["name"] == "kv.get" }?["x-rpcd-read-only"], true)
        guard getuid() == 0 else { return }
        let adminDocument = try call(RawConnection(.unix(path: daemon.socketPath)), "rpc.discover")["result"]
        let fingerprint = { (doc: JSONValue?) in doc?["x-rpcd-services"]?.arrayValue?.first { $0["name"] == "kv" }?["fingerprint"] }
        XCTAssertEqual(fingerprint(document), fingerprint(adminDocument))
        XCTAssertTrue(adminDocument?["methods"]?.arrayValue?.contains { $0["name"] == "kv.set" } ?? false)
    }

    /// Opening up is one line: here, every method to loopback TCP peers.
    func testOneLineOpensStateChangingMethods() throws {
        let daemon = try DaemonProcess(DaemonOptions(access: "Allow=127.0.0.0/8", handlers: handlers))
        let tcp = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try call(tcp, "kv.set", #"["a", 1]"#)["result"], true)
        XCTAssertEqual(try call(tcp, "rpcd.setLogLevel", #"["info"]"#)["result"], "info")
    }

    /// A handler file's [Access] replaces rpcd.conf's lists for its service only.
    func testHandlerRulesApplyToTheirServiceOnly() throws {
        try handlers.write("kv", "[Handler]\nModule=kv\n[Access]\nAllow=local\n")
        let daemon = try DaemonProcess(DaemonOptions(access: "", handlers: handlers))
        let tcp = try RawConnection(daemon.tcpEndpoint)
        XCTAssertEqual(try call(tcp, "kv.set", #"["a", 1]"#)["result"], true)
        XCTAssertEqual(try call(tcp, "rpcd.setLogLevel", #"["info"]"#)["error"]?["code"], -32007)
    }

    /// An empty list names nobody: AllowRead= with nothing after it shuts local readers out too.
    func testEmptyListsNameNobody() throws {
        let daemon = try DaemonProcess(DaemonOptions(access: "Allow=\nAllowRead=", handlers: handlers))
        XCTAssertEqual(try call(RawConnection(daemon.tcpEndpoint), "calc.add", "[1, 2]")["error"]?["code"], -32007)
    }

    /// On the Unix socket the kernel says who calls: another user gets only what AllowRead= gives, whatever the
    /// socket's mode lets it connect to. Needs root, to run a client as another user.
    func testUnixSocketPeersAreJudgedByTheirCredentials() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root to run a client as another user") }
        let daemon = try DaemonProcess(DaemonOptions(access: "", handlers: handlers))
        let script = """
            def call(method, params):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": 1}).encode()
                s.sendall(struct.pack(">I", len(body)) + body)
                n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
                return json.loads(s.recv(n, socket.MSG_WAITALL))
            print(json.dumps([call("calc.add", [1, 2]), call("kv.set", ["a", 1])]))
            """
        let process = Process()
        // The modules load before the privileges go: another user may not read root's Python installation.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import json, os, socket, struct, sys; os.setgroups([]); os.setgid(65534); os.setuid(65534); exec(\(pythonString(script)))",
            daemon.socketPath,
        ]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        let replies = try JSONValue(parsing: text)
        XCTAssertEqual(replies[0]?["result"], 3, "nobody may read")
        XCTAssertEqual(replies[1]?["error"]?["code"], -32007, "nobody may not change state")
    }

    /// Refusals are logged with peer and method, but a scan cannot flood the log: past ten a second they are
    /// counted, and the next entry says how many were dropped.
    func testRefusalsAreLoggedAtALimitedRate() throws {
        let daemon = try DaemonProcess(DaemonOptions(access: "", handlers: handlers))
        let tcp = try RawConnection(daemon.tcpEndpoint)
        for _ in 0..<50 { _ = try call(tcp, "kv.set", #"["a", 1]"#) }
        XCTAssertEqual(try call(tcp, "rpcd.info")["result"]?["calls"]?["denied"], 50)
        let logged = daemon.stderr.components(separatedBy: "Call refused by the access rules").count - 1
        XCTAssertGreaterThanOrEqual(logged, 1)
        XCTAssertLessThanOrEqual(logged, 20, "at most ten a second")
    }

    private func pythonString(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            .replacingOccurrences(of: "\n", with: "\\n") + "'"
    }
}
