import Foundation
import RPCClientTools
import RPCTestSupport
import XCTest

/// rpcctl takes its connection options before the subcommand as well as after it, as the docs show them
/// (`rpcctl --address ADDRESS call ...`), and `LeadingOptions` knows every one of them.
final class RPCCtlOptionsTests: XCTestCase {
    func testConnectionOptionsBeforeTheSubcommand() throws {
        let daemon = try DaemonProcess(DaemonOptions(modules: ["calc"]))
        let call = try DaemonProcess.runTool("rpcctl", ["--address", daemon.socketPath, "--timeout", "5", "call", "calc.add", "1", "2"])
        XCTAssertEqual(call.status, 0, call.stderr)
        XCTAssertEqual(call.stdout, "3\n")
        let ping = try DaemonProcess.runTool("rpcctl", ["--json", "--address=\(daemon.socketPath)", "ping"])
        XCTAssertEqual(ping.status, 0, ping.stderr)
        XCTAssertTrue(ping.stdout.hasPrefix("{"), ping.stdout)
    }

    func testLeadingOptionsNamesEveryConnectionOption() throws {
        let help = try DaemonProcess.runTool("rpcctl", ["ping", "--help"]).stdout
        // The options column: lines that start with an option name ("  --address <address>  ...", "  -h, --help").
        let documented = Set(help.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            guard words.first?.hasPrefix("-") == true else { return nil }
            return words.first { $0.hasPrefix("--") }.map { String($0.trimmingCharacters(in: [","])) }
        })
        XCTAssertEqual(LeadingOptions.valued.union(LeadingOptions.flags), documented.subtracting(["--help", "--version"]), help)
    }

    /// docs/RPCCTL.md's synopsis and rpcctl(1)'s name every subcommand `rpcctl --help` lists (issue 40: `top`
    /// was missing from the guide's).
    func testTheSynopsesNameEverySubcommand() throws {
        let help = try DaemonProcess.runTool("rpcctl", ["--help"]).stdout
        let listed = try XCTUnwrap(help.components(separatedBy: "SUBCOMMANDS:\n").dropFirst().first)
            .components(separatedBy: "\n\n")[0].split(separator: "\n").compactMap { line -> String? in
                // A subcommand's line starts with two spaces and its name; continuations are indented further.
                guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first else { return nil }
                return String(name)
            }
        XCTAssertGreaterThanOrEqual(listed.count, 10, help)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let guide = try String(contentsOf: root.appendingPathComponent("docs/RPCCTL.md"), encoding: .utf8)
        let synopsis = try XCTUnwrap(guide.components(separatedBy: "```\n").dropFirst().first)
        let manual = try String(contentsOf: root.appendingPathComponent("man/rpcctl.1"), encoding: .utf8)
            .replacingOccurrences(of: "\\-", with: "-")
        let manualSynopsis = try XCTUnwrap(manual.components(separatedBy: ".SH DESCRIPTION").first)
        for name in listed where name != "help" {
            XCTAssertTrue(synopsis.contains("\nrpcctl \(name)") || synopsis.hasPrefix("rpcctl \(name)"), "RPCCTL.md's synopsis lacks rpcctl \(name)")
            XCTAssertTrue(manualSynopsis.contains(".B rpcctl \(name)\n"), "rpcctl(1)'s synopsis lacks rpcctl \(name)")
        }
    }

    /// docs/RPCCTL.md's `rpcctl info` sample lists the example modules' and built-in services as this rpcd
    /// reports them: method and event counts and fingerprints (which change whenever an interface does).
    func testInfoSampleInTheGuideShowsTheServicesAsServed() throws {
        let guide = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/RPCCTL.md"), encoding: .utf8)
        let sample = try XCTUnwrap(guide.components(separatedBy: "$ rpcctl info\n").dropFirst().first?.components(separatedBy: "```").first)
        let shown = sample.split(separator: "\n").filter { $0.hasPrefix("  ") }.map(String.init)
        XCTAssertEqual(shown.count, 6, sample)
        let daemon = try DaemonProcess(DaemonOptions(modules: DaemonProcess.exampleModules))
        let info = try DaemonProcess.runTool("rpcctl", ["info", "--address", daemon.socketPath])
        XCTAssertEqual(info.status, 0, info.stderr)
        XCTAssertEqual(info.stdout.split(separator: "\n").filter { $0.hasPrefix("  ") }.map(String.init), shown)
    }

    /// `rpcctl --version` prints the release, as `rpcd --version` does (rpcctl(1)).
    func testVersionIsRpcdsVersion() throws {
        let rpcctl = try DaemonProcess.runTool("rpcctl", ["--version"])
        XCTAssertEqual(rpcctl.status, 0, rpcctl.stderr)
        let rpcd = try DaemonProcess.runTool("rpcd", ["--version"])
        XCTAssertEqual(rpcctl.stdout, rpcd.stdout)
        XCTAssertFalse(rpcctl.stdout.isEmpty)
    }
}
