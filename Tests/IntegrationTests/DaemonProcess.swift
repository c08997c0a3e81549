import Foundation
import RPCProtocol
import RPCWire
import XCTest

/// A real `rpcd` process for a test: its own temporary directory, a Unix socket there, an ephemeral TCP port
/// on 127.0.0.1. Stops with SIGTERM (or SIGKILL as a last resort) when the test ends.
final class DaemonProcess: @unchecked Sendable {
    let directory: URL
    let process = Process()
    private let stderrPipe = Pipe()
    private let lock = NSCondition()
    private var stderrText = ""
    /// The pipe reached its end: rpcd (and the module hosts, which share it) exited, and `stderr` is complete.
    private var stderrEnded = false
    private(set) var tcpEndpoint: RPCEndpoint!
    let socketPath: String

    /// The directory holding the built products (`rpcd`, `rpcctl`): `RPCD_BIN_DIR`, or the test bundle's own.
    static var productsDirectory: URL {
        if let dir = ProcessInfo.processInfo.environment["RPCD_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// The example modules this package builds (libecho.so, libcalc.so, ...), by handler name.
    static let exampleModules = ["calc", "echo", "kv", "sysinfo"]

    /// Starts rpcd. `config` is the text of rpcd.conf ([Server] lines); listeners are added by the fixture
    /// unless `arguments` choose otherwise. `modules` names example modules to load: each gets a handler file
    /// `NAME.conf` (`Module=NAME`, store in memory) in a handlers.d of the daemon's own. A test that writes
    /// its own handler files passes `handlers` instead. Modules are found in `moduleDirectory`, by default
    /// the products directory. With no handlers rpcd serves only its built-in `rpc` and `rpcd` methods.
    init(
        config: String = "", modules: [String] = [], handlers: HandlersDirectory? = nil, moduleDirectory: URL? = nil,
        arguments: [String]? = nil, whileStarting: (DaemonProcess) throws -> Void = { _ in },
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        socketPath = directory.appendingPathComponent("rpcd.sock").path
        let configPath = directory.appendingPathComponent("rpcd.conf").path
        var configText = "[Server]\nListen=127.0.0.1:0\nListen=\(socketPath)\n" + config
        // The shipped access rules, with the user running the tests as an administrator too (CI runs as root,
        // which the shipped rules already name); a test that sets [Access] itself gets exactly its own rules.
        if !config.contains("[Access]") { configText += "\n[Access]\nAllow=user:root group:rpcd user:\(getuid())\n" }
        try configText.write(toFile: configPath, atomically: true, encoding: .utf8)

        process.executableURL = Self.productsDirectory.appendingPathComponent("rpcd")
        // Without --handlers-dir the daemon would read the machine's own /etc/rpcd/handlers.d.
        let ownHandlers = directory.appendingPathComponent("handlers.d")
        try FileManager.default.createDirectory(at: ownHandlers, withIntermediateDirectories: true)
        for name in modules {
            try "[Handler]\nModule=\(name)\n".write(
                to: ownHandlers.appendingPathComponent("\(name).conf"), atomically: true, encoding: .utf8)
        }
        let isolation = ["--handlers-dir", handlers?.path ?? ownHandlers.path, "--module-dir", (moduleDirectory ?? Self.productsDirectory).path]
        process.arguments = arguments ?? ["--config", configPath] + isolation
        // Strict mode turns NIO's misuse warnings (such as scheduling on a loop that has shut down) into crashes.
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFTNIO_STRICT": "1"]) { $1 }
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            self.lock.lock()
            if data.isEmpty { self.stderrEnded = true } else { self.stderrText += String(decoding: data, as: UTF8.self) }
            self.lock.broadcast()
            self.lock.unlock()
        }
        try process.run()
        // What a test does to rpcd after it began to start, before it listens.
        try whileStarting(self)
        if arguments == nil {
            let listening = try waitForLog(matching: #"rpcd_listener=(127\.0\.0\.1:\d+)"#, file: file, line: line)
            tcpEndpoint = try RPCEndpoint(parsing: listening)
            _ = try waitForLog(matching: "rpcd_listener=(\(NSRegularExpression.escapedPattern(for: socketPath)))")
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        stderrPipe.fileHandleForReading.readabilityHandler = nil
        try? FileManager.default.removeItem(at: directory)
    }

    var stderr: String {
        lock.lock()
        defer { lock.unlock() }
        return stderrText
    }

    /// Waits until stderr contains a match of `pattern`; returns its first capture group (or the whole match).
    @discardableResult
    func waitForLog(matching pattern: String, timeout: TimeInterval = 30, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let regex = try NSRegularExpression(pattern: pattern)
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while true {
            let range = NSRange(stderrText.startIndex..., in: stderrText)
            if let match = regex.firstMatch(in: stderrText, range: range) {
                let group = match.numberOfRanges > 1 ? match.range(at: 1) : match.range
                return String(stderrText[Range(group, in: stderrText)!])
            }
            guard process.isRunning || !stderrText.isEmpty, lock.wait(until: deadline) else {
                XCTFail("rpcd did not log /\(pattern)/ in \(timeout)s; stderr:\n\(stderrText)", file: file, line: line)
                throw CocoaError(.fileReadUnknown)
            }
        }
    }

    /// Sends SIGTERM and waits for the exit status (SIGKILL after `timeout`).
    @discardableResult
    func terminate(timeout: TimeInterval = 30) -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGTERM)
        return waitForExit(timeout: timeout)
    }

    func waitForExit(timeout: TimeInterval = 30) -> Int32 {
        let exited = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            self.process.waitUntilExit()
            exited.signal()
        }
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            XCTFail("rpcd did not exit within \(timeout)s")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        // What rpcd wrote last may still be in the pipe: read to its end (bounded, as a module host might linger).
        lock.lock()
        let deadline = Date().addingTimeInterval(10)
        while !stderrEnded, lock.wait(until: deadline) {}
        lock.unlock()
        return process.terminationStatus
    }

    /// Sends SIGHUP and waits for the reload's outcome in the log; returns its line.
    @discardableResult
    func reload(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let before = stderr.components(separatedBy: "Reload").count
        kill(process.processIdentifier, SIGHUP)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let text = stderr
            if text.components(separatedBy: "Reload").count >= before + 2,
               let outcome = text.split(separator: "\n").last(where: { $0.contains("Reloaded") || $0.contains("Reload failed") }) {
                return String(outcome)
            }
            lock.lock()
            _ = lock.wait(until: Date().addingTimeInterval(0.2))
            lock.unlock()
        }
        XCTFail("no reload outcome logged; stderr:\n\(stderr)", file: file, line: line)
        return ""
    }

    /// Resident memory of the daemon in KiB, from /proc.
    var residentKiB: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Runs a command-line tool from the products directory; returns exit status, stdout and stderr.
    static func runTool(_ name: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        let tool = Process()
        tool.executableURL = productsDirectory.appendingPathComponent(name)
        tool.arguments = arguments
        if let environment { tool.environment = environment }
        let out = Pipe()
        let err = Pipe()
        tool.standardOutput = out
        tool.standardError = err
        try tool.run()
        // Read before waiting so a large output cannot fill the pipe and stall the tool.
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        tool.waitUntilExit()
        return (tool.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }
}
