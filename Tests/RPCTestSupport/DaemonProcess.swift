package import Foundation
package import RPCProtocol
import RPCWire
import XCTest

/// How a test's rpcd is set up: the one value every integration test starts a daemon with.
///
/// The daemon always gets a directory of its own (rpcd.conf, a Unix socket, handlers.d unless `handlers` is
/// given), listens on that socket and on an ephemeral TCP port on 127.0.0.1, and never reads the machine's
/// /etc/rpcd. With the defaults it serves only its built-in `rpc` and `rpcd` methods.
package struct DaemonOptions {
    /// More lines for rpcd.conf after the fixture's `[Server]` listeners: `[Server]` keys, then other sections.
    package var config: String
    /// The `[Access]` section's lines; nil gives the shipped rules with the user running the tests as an
    /// administrator too (CI runs as root, which the shipped rules already name), "" the shipped rules alone.
    package var access: String?
    /// Example modules (libNAME.so) to serve, each with a handler file `NAME.conf` of `[Handler] Module=NAME`.
    package var modules: [String]
    /// More handler files, text by name (`NAME.conf`).
    package var handlerFiles: [String: String]
    /// A handlers.d that outlives the daemon (a test restarts one on the same files, or changes them and
    /// reloads); `modules` and `handlerFiles` are written into it. Nil: the daemon's own directory.
    package var handlers: HandlersDirectory?
    /// Where modules are found; nil: the products directory.
    package var moduleDirectory: URL?
    /// rpcd's whole command line instead of the fixture's (`--config`, `--handlers-dir`, `--module-dir`); the
    /// test then waits for whatever it expects itself, as rpcd need not listen.
    package var arguments: [String]?

    package init(
        config: String = "", access: String? = nil, modules: [String] = [], handlerFiles: [String: String] = [:],
        handlers: HandlersDirectory? = nil, moduleDirectory: URL? = nil, arguments: [String]? = nil
    ) {
        self.config = config
        self.access = access
        self.modules = modules
        self.handlerFiles = handlerFiles
        self.handlers = handlers
        self.moduleDirectory = moduleDirectory
        self.arguments = arguments
    }
}

/// A real `rpcd` process for a test, started from `DaemonOptions`: its own temporary directory, a Unix socket
/// there, an ephemeral TCP port on 127.0.0.1. Killed (SIGKILL) if still running when the value goes away; a
/// test that checks the exit calls `terminate()`. Blocking: its waits are for synchronous tests' threads.
package final class DaemonProcess: @unchecked Sendable {
    package let directory: URL
    package let process = Process()
    private let stderrPipe = Pipe()
    private let lock = NSCondition()
    private var stderrText = ""
    /// The pipe reached its end: rpcd (and the module hosts, which share it) exited, and `stderr` is complete.
    private var stderrEnded = false
    package private(set) var tcpEndpoint: RPCEndpoint!
    package let socketPath: String
    /// Kept so that a shared handlers.d lives at least as long as the daemon reading it.
    private let handlers: HandlersDirectory?

    /// The directory holding the built products (`rpcd`, `rpcctl`): `RPCD_BIN_DIR`, or the test bundle's own.
    package static var productsDirectory: URL {
        if let dir = ProcessInfo.processInfo.environment["RPCD_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// The example modules this package builds (libecho.so, libcalc.so, ...), by handler name.
    package static let exampleModules = ["calc", "echo", "kv", "sysinfo"]

    /// Starts rpcd as `options` say and, unless they give its command line, waits until it listens.
    /// `whileStarting` is what a test does to rpcd after it began to start, before it listens.
    package init(
        _ options: DaemonOptions = DaemonOptions(), whileStarting: (DaemonProcess) throws -> Void = { _ in },
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        socketPath = directory.appendingPathComponent("rpcd.sock").path
        handlers = options.handlers
        let configPath = directory.appendingPathComponent("rpcd.conf").path
        let access = options.access ?? "Allow=user:root group:rpcd user:\(getuid())"
        let configText = "[Server]\nListen=127.0.0.1:0\nListen=\(socketPath)\n" + options.config + "\n[Access]\n\(access)\n"
        try configText.write(toFile: configPath, atomically: true, encoding: .utf8)

        process.executableURL = Self.productsDirectory.appendingPathComponent("rpcd")
        // Without --handlers-dir the daemon would read the machine's own /etc/rpcd/handlers.d.
        let handlersURL = options.handlers?.url ?? directory.appendingPathComponent("handlers.d")
        try FileManager.default.createDirectory(at: handlersURL, withIntermediateDirectories: true)
        var files = options.handlerFiles
        for name in options.modules { files[name] = "[Handler]\nModule=\(name)\n" }
        for (name, text) in files {
            try text.write(to: handlersURL.appendingPathComponent("\(name).conf"), atomically: true, encoding: .utf8)
        }
        // StateDirectory= directories beside handlers.d, so that a shared handlers.d keeps them across daemons.
        let isolation = [
            "--handlers-dir", handlersURL.path, "--module-dir", (options.moduleDirectory ?? Self.productsDirectory).path,
            "--state-dir", Self.stateRoot(handlers: handlersURL).path,
        ]
        process.arguments = options.arguments ?? ["--config", configPath] + isolation
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
        try whileStarting(self)
        if options.arguments == nil {
            tcpEndpoint = try listener(#"127\.0\.0\.1:\d+"#, file: file, line: line)
            _ = try waitForLog(matching: "rpcd_listener=(\(NSRegularExpression.escapedPattern(for: socketPath)))")
        }
    }

    /// rpcd's state root (`--state-dir`) for a daemon reading `handlers`: `StateDirectory=NAME` is `ROOT/NAME`.
    package static func stateRoot(handlers: URL) -> URL {
        handlers.appendingPathComponent("lib")
    }

    /// The endpoint of a listener rpcd logged, once it has: `pattern` matches its address as logged
    /// (`#"tls://127\.0\.0\.1:\d+"#` for a TLS listener on an ephemeral port).
    package func listener(_ pattern: String, file: StaticString = #filePath, line: UInt = #line) throws -> RPCEndpoint {
        try RPCEndpoint(parsing: waitForLog(matching: "rpcd_listener=(\(pattern))", file: file, line: line))
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        stderrPipe.fileHandleForReading.readabilityHandler = nil
        try? FileManager.default.removeItem(at: directory)
    }

    package var stderr: String {
        lock.lock()
        defer { lock.unlock() }
        return stderrText
    }

    /// Waits until stderr contains a match of `pattern`; returns its first capture group (or the whole match).
    @discardableResult
    package func waitForLog(matching pattern: String, timeout: TimeInterval = 30, file: StaticString = #filePath, line: UInt = #line) throws -> String {
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
    package func terminate(timeout: TimeInterval = 30) -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGTERM)
        return waitForExit(timeout: timeout)
    }

    package func waitForExit(timeout: TimeInterval = 30) -> Int32 {
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
    package func reload(file: StaticString = #filePath, line: UInt = #line) throws -> String {
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
    package var residentKiB: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Runs a command-line tool from the products directory; returns exit status, stdout and stderr.
    package static func runTool(_ name: String, _ arguments: [String], environment: [String: String]? = nil) throws
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
