import ArgumentParser
import RPCClient
import RPCJSON
import RPCLogging

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print a service's events as they happen (rpc.subscribe).",
        discussion: """
            Subscribes to SERVICE.EVENT (rpc.discover lists events under x-events; rpcctl list shows them) and \
            prints one line per event: its sequence number and payload, or with --json one JSON object per line, \
            {"event": ..., "seq": N, "data": ...}. Events the server had to drop for a reader that fell behind \
            are reported as "N events lost" ({"lost": N} with --json). Stops after --count events, when the \
            server ends the subscription (exit status 69), or on Ctrl-C.
            """)

    @OptionGroup var options: ClientOptions

    @Argument(help: "The event, SERVICE.EVENT (kv.changed).")
    var event: String

    @Option(name: .shortAndLong, help: "Stop after this many events.")
    var count: Int?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        let timeout = options.timeoutDuration
        let (event, json, count) = (event, options.json, count)
        try await options.withClient(method: event) { client throws(RPCClientError) in
            let events = try await client.subscribe(to: event, timeout: timeout)
            var seen = 0
            for try await item in events {
                switch item {
                case .event(let seq, let payload):
                    Self.emit(
                        json ? #"{"event":\#(JSONValue.string(event).jsonText),"seq":\#(seq),"data":\#(payload.jsonText)}"#
                            : "\(event) #\(seq) \(payload.jsonText)")
                    seen += 1
                    if let count, seen >= count { return }
                case .lost(let lost):
                    Self.emit(json ? #"{"lost":\#(lost)}"# : "\(lost) events lost")
                case .resubscribed:
                    Self.emit(json ? #"{"resubscribed":true}"# : "connection lost and made again; events in between are unknown")
                }
            }
        }
    }

    /// One line on stdout at once, not when a buffer fills: a watcher is read as it goes.
    private static func emit(_ line: String) {
        DescriptorOutput.write(line + "\n", to: 1)
    }
}
