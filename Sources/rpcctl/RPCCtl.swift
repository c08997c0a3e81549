import ArgumentParser
import RPCClientTools
import RPCProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

@main
struct RPCCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rpcctl",
        abstract: "Talk to rpcd: call methods, list services, check health and measure throughput.",
        discussion: """
            ADDRESS is HOST:PORT, [IPV6]:PORT or an absolute Unix socket path. Without --address, rpcctl uses \
            $RPCD_ADDRESS, else /run/rpcd/rpcd.sock if that socket exists, else 127.0.0.1:7390.

            Exit status: 0 success; 1 the server answered with an error; 64 usage error; 65 --api does not match; \
            69 cannot connect or no instance found; \
            75 timed out; 76 the connection broke or the reply was not valid JSON-RPC. Guide: docs/RPCCTL.md.
            """,
        version: RPCDaemonVersion.version,
        subcommands: [
            CallCommand.self, PingCommand.self, ListCommand.self, InfoCommand.self, LogLevelCommand.self,
            ReloadCommand.self, BrowseCommand.self, BenchCommand.self, WatchCommand.self, TopCommand.self,
        ])

    /// Like ArgumentParser's own entry point, but every error line starts with `rpcctl: `.
    static func main() async {
        do {
            let subcommands = Set(configuration.subcommands.compactMap { $0.configuration.commandName })
            var command = try parseAsRoot(
                LeadingOptions.reordered(Array(CommandLine.arguments.dropFirst()), subcommands: subcommands))
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
            } else if !message.isEmpty {
                Terminal.error(message.hasPrefix("Error: ") ? String(message.dropFirst("Error: ".count)) : message)
            }
            Glibc.exit(code.rawValue)
        }
    }
}
