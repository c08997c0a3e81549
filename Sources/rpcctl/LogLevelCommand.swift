import ArgumentParser
import RPCClient
import RPCJSON

struct LogLevelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log-level",
        abstract: "Show or change rpcd's log level at run time (rpcd.logLevel, rpcd.setLogLevel).",
        discussion: """
            Without LEVEL, prints the current level. With it, sets the level until the next reload or restart \
            (which go back to LogLevel= in rpcd.conf) and prints "LEVEL (was PREVIOUS)".
            """)

    static let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    @Argument(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var level: String?

    @OptionGroup var options: ClientOptions

    mutating func validate() throws {
        if let level {
            guard Self.levels.contains(level.lowercased()) else {
                throw ValidationError("unknown log level '\(level)': expected one of \(Self.levels.joined(separator: ", "))")
            }
            self.level = level.lowercased()
        }
    }

    func run() async throws {
        let timeout = options.timeoutDuration
        if let level {
            let previous = try await options.withClient(method: "rpcd.setLogLevel") { client throws(RPCClientError) in
                try await client.call("rpcd.setLogLevel", params: ["level": .string(level)], timeout: timeout)
            }
            if options.json {
                Terminal.printJSON(["level": .string(level), "previous": previous])
            } else {
                print("\(level) (was \(previous.stringValue ?? previous.jsonText))")
            }
        } else {
            let current = try await options.withClient(method: "rpcd.logLevel") { client throws(RPCClientError) in
                try await client.call("rpcd.logLevel", timeout: timeout)
            }
            if options.json {
                Terminal.printJSON(["level": current])
            } else {
                print(current.stringValue ?? current.jsonText)
            }
        }
    }
}
