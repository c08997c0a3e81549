import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RPCClient
import RPCClientTools
import RPCJSON

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure throughput and latency of one method under load.",
        discussion: """
            Opens C connections; each keeps D identical calls in flight and sends the next as soon as one is \
            answered, for a warm-up and then the measured duration. Reports calls per second, latency \
            percentiles (ms) and error replies. Exits non-zero if a connection failed or every call errored.

              rpcctl bench rpcd.ping --connections 50 --depth 16 --duration 10
            """)

    @Argument(help: "The method to call, as SERVICE.METHOD.")
    var method: String

    @Option(name: .long, help: ArgumentHelp("Params as a JSON array or object.", valueName: "json"))
    var params: String?

    @Option(name: .long, help: "Number of connections.")
    var connections = 50

    @Option(name: .long, help: "Calls in flight per connection.")
    var depth = 1

    @Option(name: .long, help: ArgumentHelp("Measured seconds (at most 3600).", valueName: "seconds"))
    var duration: Double = 10

    @Option(name: .long, help: ArgumentHelp("Seconds of load before measuring.", valueName: "seconds"))
    var warmup: Double = 1

    @Option(name: .long, help: "Event loop threads of the load generator (default: number of cores).")
    var threads: Int?

    @OptionGroup var options: ClientOptions

    func validate() throws {
        guard (1...10_000).contains(connections) else { throw ValidationError("--connections must be 1…10000") }
        guard (1...4096).contains(depth) else { throw ValidationError("--depth must be 1…4096") }
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration must be more than 0 and at most 3600") }
        guard warmup >= 0, warmup <= 600 else { throw ValidationError("--warmup must be 0…600") }
        if let threads { guard (1...256).contains(threads) else { throw ValidationError("--threads must be 1…256") } }
        _ = try parsedParams()
    }

    func parsedParams() throws -> JSONValue? {
        guard let params else { return nil }
        do {
            return try RPCCallArguments.params(json: params)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        let endpoint = try options.endpoint()
        let configuration = RPCLoadConfiguration(
            endpoint: endpoint, method: method, params: try parsedParams(), connections: connections, depth: depth,
            duration: .milliseconds(Int64((duration * 1000).rounded())),
            warmup: .milliseconds(Int64((warmup * 1000).rounded())),
            threads: threads ?? ProcessInfo.processInfo.activeProcessorCount,
            connectTimeout: options.timeoutDuration)
        if !options.json {
            print(BenchReport.header(configuration))
        }
        let result = await RPCLoadGenerator.run(configuration, recorder: HistogramRecorder.self)
        let report = BenchReport(configuration: configuration, result: result)
        if report.anyConnection {
            print(options.json ? report.json.jsonText : report.text, terminator: options.json ? "\n" : "")
        }
        try report.checkOutcome()
    }
}
