import Foundation
import RPCJSON
import RPCTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The walls the kernel keeps between rpcd and a module host (docs/SECURITY.md, "Module sandbox"), tried from
/// inside one with the `faulty` test module: the host holds only the descriptors it was handed, its end is
/// seen from its process whatever its children hold, and what it starts ends with it.
final class ModuleHostWallsTests: XCTestCase {
    private var handlers: HandlersDirectory!

    override func setUpWithError() throws {
        handlers = try HandlersDirectory()
    }

    override func tearDown() {
        handlers = nil
    }

    private func serving(faulty extra: String = "") -> DaemonOptions {
        DaemonOptions(modules: ["calc"], handlerFiles: ["faulty": "[Handler]\nModule=faulty\n\(extra)\n"], handlers: handlers)
    }


    /// The host's descriptors that are sockets.
    private func sockets(_ connection: RawConnection) throws -> [Int] {
        let reply = try connection.call(requestText("faulty.sockets", id: 90))
        return try XCTUnwrap(reply["result"]?.arrayValue, "\(reply)").compactMap(\.intValue)
    }

    private func waitUntilRestarted(_ daemon: DaemonProcess, times count: Int) throws {
        try daemon.waitForLog(matching: "(Module host restarted(?s:.*)){\(count)}")
    }

    /// Whether `pid` is a process that has not ended (a zombie has).
    private func running(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[close...].hasPrefix(") Z")
    }

    /// Hosts started while peers are connected and rpcd listens (after a crash, after a reload) hold no socket
    /// but their link, descriptor 3: not rpcd's listeners, not other peers' connections.
    func testAHostHoldsNoSocketButItsLinkAfterRestartsAndReloads() throws {
        let daemon = try DaemonProcess(serving())
        let peers = try (0..<3).map { _ in try RawConnection(daemon.tcpEndpoint) }
        let unixPeer = try RawConnection(.unix(path: daemon.socketPath))
        XCTAssertEqual(try sockets(peers[0]), [3], "the first host")

        XCTAssertEqual(try peers[1].call(requestText("faulty.crash", id: 1))["error"]?["code"], -32005)
        try waitUntilRestarted(daemon, times: 1)
        XCTAssertEqual(try sockets(unixPeer), [3], "a host restarted after a crash")

        try handlers.write("faulty", "[Handler]\nModule=faulty\nTimeout=5s\n")
        XCTAssertTrue(try daemon.reload().contains("Reloaded"))
        XCTAssertEqual(try sockets(peers[2]), [3], "a host started by a reload")
        XCTAssertEqual(try peers[0].call(requestText("calc.add", id: 2, params: "[1,2]"))["result"]?.doubleValue, 3)
    }

    /// A host that aborts while a child it forked keeps the link open is answered for at once, and the child
    /// ends with it (before, the call waited until the child exited, for ever if it never did).
    func testAHostsEndIsSeenAtOnceWhileItsChildHoldsTheLink() throws {
        let daemon = try DaemonProcess(serving())
        let caller = try RawConnection(daemon.tcpEndpoint, receiveTimeout: 5)
        let started = ContinuousClock.now
        let reply = try caller.call(requestText("faulty.fork_abort", id: 1))
        XCTAssertEqual(reply["error"]?["code"], -32005, "\(reply)")
        XCTAssertEqual(reply["error"]?["data"]?["termination"], "SIGABRT", "\(reply)")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2))
        try waitUntilRestarted(daemon, times: 1)
        XCTAssertEqual(try caller.call(requestText("faulty.ok", id: 2))["result"], "ok")
    }

    /// A process a host started does not outlive it.
    func testWhatAHostStartsEndsWithIt() throws {
        let daemon = try DaemonProcess(serving())
        let caller = try RawConnection(daemon.tcpEndpoint)
        let child = pid_t(try XCTUnwrap(caller.call(requestText("faulty.fork_orphan", id: 1))["result"]?.intValue))
        XCTAssertTrue(running(child))
        XCTAssertEqual(try caller.call(requestText("faulty.crash", id: 2))["error"]?["code"], -32005)
        try blockingWaitUntil("the host's child to end with it") { !running(child) }
        try waitUntilRestarted(daemon, times: 1)
    }

    /// `Uid:`, `Gid:`, `Groups:` and `CapEff:` of /proc/PID/status.
    private func status(_ pid: Int) throws -> [String: String] {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return fields
    }

    /// A host runs as a user and group of its own, with no supplementary group and no capability, whoever rpcd is.
    func testAHostRunsAsAUserOfItsOwnWithNothingElse() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: rpcd starts hosts as users of their own only as root or with CAP_SETUID") }
        let daemon = try DaemonProcess(serving())
        let caller = try RawConnection(daemon.tcpEndpoint)
        let host = try XCTUnwrap(caller.call(requestText("faulty.pid", id: 1))["result"]?.intValue)
        let fields = try status(host)
        let uids = try XCTUnwrap(fields["Uid"]).split(separator: "\t").compactMap { UInt32($0) }
        XCTAssertEqual(Set(uids).count, 1, "real, effective, saved and file system uid are one: \(fields)")
        let uid = try XCTUnwrap(uids.first)
        XCTAssertTrue((0x6_0000...0x6_0FFF).contains(uid), "a module host user: \(uid)")
        XCTAssertEqual(fields["Gid"]?.split(separator: "\t").compactMap { UInt32($0) }, [uid, uid, uid, uid])
        XCTAssertEqual(fields["Groups"], "")
        XCTAssertEqual(fields["CapEff"], "0000000000000000")
        XCTAssertEqual(fields["CapPrm"], "0000000000000000")
        XCTAssertEqual(fields["CapAmb"], "0000000000000000")
        // The same handler's next host is the same user; rpcd's /proc is another user's.
        XCTAssertEqual(try caller.call(requestText("faulty.read", id: 2, params: #"["/proc/\#(daemon.process.processIdentifier)/environ"]"#))["result"], false)
        XCTAssertEqual(try caller.call(requestText("faulty.crash", id: 3))["error"]?["code"], -32005)
        try waitUntilRestarted(daemon, times: 1)
        let next = try XCTUnwrap(caller.call(requestText("faulty.pid", id: 4))["result"]?.intValue)
        XCTAssertEqual(try status(next)["Uid"], fields["Uid"])
    }

    /// A module that calls rpcd back through its Unix socket is nobody the access rules know: neither an
    /// administrator (rpcd's user, root) nor `local`; it is refused what it asks, read-only or not.
    func testAModuleCallingRpcdBackHasNoRights() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: rpcd starts hosts as users of their own only as root or with CAP_SETUID") }
        let daemon = try DaemonProcess(serving())
        let caller = try RawConnection(daemon.tcpEndpoint)
        for method in ["rpcd.setLogLevel", "rpcd.ping"] {
            let reply = try caller.call(requestText("faulty.call_back", id: 1, params: #"["\#(daemon.socketPath)", "\#(method)"]"#))
            XCTAssertEqual(reply["result"]?["error"]?["code"], -32007, "\(method): \(reply)")
        }
        // rpcd itself still answers root on the same socket.
        XCTAssertEqual(try RawConnection(.unix(path: daemon.socketPath)).call(requestText("rpcd.ping", id: 2))["result"], "pong")
    }

    /// `TasksMax=` bounds the processes and threads a host may have, forks included (its cgroup's `pids.max`,
    /// or without one its own user's `RLIMIT_NPROC`), and every one of them ends with the host.
    func testTasksMaxBoundsAForkingModuleAndItsChildrenEndWithIt() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root: without a user of its own a host's tasks are rpcd's user's") }
        let daemon = try DaemonProcess(serving(faulty: "TasksMax=24"))
        let caller = try RawConnection(daemon.tcpEndpoint)
        let forked = try XCTUnwrap(caller.call(requestText("faulty.forks", id: 1))["result"]?.intValue)
        XCTAssertGreaterThan(forked, 0)
        XCTAssertLessThan(forked, 24, "the host's own threads count too")
        XCTAssertEqual(try caller.call(requestText("calc.add", id: 2, params: "[1,2]"))["result"]?.doubleValue, 3)
        let uid = try XCTUnwrap(status(try XCTUnwrap(caller.call(requestText("faulty.pid", id: 3))["result"]?.intValue))["Uid"]?.split(separator: "\t").first)
        XCTAssertEqual(try caller.call(requestText("faulty.crash", id: 4))["error"]?["code"], -32005)
        try blockingWaitUntil("every process of the host's user to end with the host") {
            try self.processes(ofUser: String(uid)).count <= 1  // the restarted host, once it is up
        }
        try waitUntilRestarted(daemon, times: 1)
    }

    /// The pids of the processes whose real user is `uid`.
    private func processes(ofUser uid: String) throws -> [Int] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc").compactMap(Int.init).filter { pid in
            guard let fields = try? status(pid), running(pid_t(pid)) else { return false }
            return fields["Uid"]?.split(separator: "\t").first.map(String.init) == uid
        }
    }

    /// Calls a peer leaves behind in a hung module stay charged to it after it disconnects (issue 36): their copies
    /// on the link and in the host are the peer's until the host answers or dies, so a new connection of the same
    /// peer finds its share spent rather than a fresh one (before, the close gave the charge back and each round
    /// of abandoned 1 MiB calls grew rpcd by 7.5 MiB, charged to no one).
    func testCallsLeftInAHungModuleStayChargedToTheirPeerAfterItLeaves() throws {
        let options = DaemonOptions(
            config: "[Server]\nMaxFrameSize=1M\nMaxBufferedBytesPerPeer=3M\n", modules: ["calc"],
            handlerFiles: ["faulty": "[Handler]\nModule=faulty\n"], handlers: handlers)
        let daemon = try DaemonProcess(options)
        let params = "[\"" + String(repeating: "x", count: 900_000) + "\"]"
        // Its frame (until answered) and its copy on the link and in the host: 1.8 of the peer's 3 MiB (while it
        // arrives, more than 2.5).
        var leaving: RawConnection? = try RawConnection(daemon.tcpEndpoint)
        try leaving?.sendFrame(requestText("faulty.hang_blocking", id: 1, params: params))
        let observer = try RawConnection(.unix(path: daemon.socketPath))
        func buffered() throws -> Int {
            try XCTUnwrap(observer.call(requestText("rpcd.info", id: 9))["result"]?["frames"]?["buffered_bytes"]?.intValue)
        }
        // In the module, not waiting for a worker: a call the module never saw is over for the host once its
        // caller leaves, and gives its charge back (the host answers it -32011, which rpcd drops).
        try blockingWaitUntil("the call to be in the module") {
            try observer.call(requestText("faulty.hanging", id: 8))["result"]?.intValue == 1
        }
        XCTAssertGreaterThanOrEqual(try buffered(), 1_800_000, "its frame and its copy in the host")
        leaving = nil
        // The connection's own frame is given back as it closes; the call's copy in the host is not.
        try blockingWaitUntil("the closed connection's frame to be given back") { try buffered() < 1_800_000 }
        XCTAssertGreaterThanOrEqual(try buffered(), 900_000, "what the abandoned call holds is still charged")
        let again = try RawConnection(daemon.tcpEndpoint)
        let refused = try again.call(requestText("faulty.hang_blocking", id: 2, params: params))
        XCTAssertEqual(refused["error"]?["code"], -32009, "the same peer's share is spent: \(refused)")
        XCTAssertEqual(try again.call(requestText("calc.add", id: 4, params: "[1,2]"))["result"]?.doubleValue, 3)
    }

    /// A module's reply is charged to its caller as it arrives (issue 36): one the caller's share cannot cover is
    /// answered -32009 as its length is read and skipped as it arrives, never gathered (before, rpcd gathered a
    /// 200 MiB reply whole, charged to no one, and only then refused it).
    func testAReplyTooLargeForItsCallerIsRefusedWithoutBeingHeld() throws {
        let daemon = try DaemonProcess(serving(faulty: "MemoryMax=infinity"))
        let caller = try RawConnection(daemon.tcpEndpoint)
        let pid = daemon.process.processIdentifier
        func peakMebibytes() throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
            return try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])) / 1024
        }
        XCTAssertEqual(try caller.call(requestText("faulty.reply", id: 1, params: "[1]"))["result"]?.stringValue?.utf8.count, 1 << 20)
        let before = try peakMebibytes()
        // Past the caller's 16 MiB share (MaxBufferedBytesPerPeer=).
        let refused = try caller.call(requestText("faulty.reply", id: 2, params: "[96]"))
        XCTAssertEqual(refused["error"]?["code"], -32009, "\(refused)")
        XCTAssertLessThan(try peakMebibytes() - before, 32, "the reply was skipped as it arrived, not gathered")
        // The link is still in step: the host's next answer is its next answer.
        XCTAssertEqual(try caller.call(requestText("faulty.ok", id: 3))["result"], "ok")
    }
}
