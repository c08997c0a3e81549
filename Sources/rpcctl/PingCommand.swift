import ArgumentParser
import RPCClient
import RPCJSON

struct PingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping",
        abstract: "Check that rpcd answers, and how fast (rpcd.ping).",
        discussion: "Prints \"pong from ADDRESS in 0.213 ms\"; the time is one call on an open connection.")

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let timeout = options.timeoutDuration
        let (endpoint, result, elapsed) = try await options.withClient(method: "rpcd.ping") {
            client throws(RPCClientError) in
            let clock = ContinuousClock()
            let start = clock.now
            let result = try await client.call("rpcd.ping", timeout: timeout)
            return (client.endpoint, result, clock.now - start)
        }
        let milliseconds = Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15
        if options.json {
            Terminal.printJSON([
                "result": result, "address": .string(endpoint.description),
                "latency_ms": Terminal.number(milliseconds, digits: 3),
            ])
        } else if result == "pong" {
            print("pong from \(endpoint) in \(Terminal.format(milliseconds, digits: 3)) ms")
        } else {
            print("\(endpoint) answered \(result.jsonText) in \(Terminal.format(milliseconds, digits: 3)) ms")
        }
    }
}
