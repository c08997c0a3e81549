import ArgumentParser
import Histogram
import RPCClient
import RPCClientTools
import RPCJSON

/// Per-connection latencies in microseconds, in an HdrHistogram (3 significant digits, up to 60 s).
struct HistogramRecorder: RPCLatencyRecorder {
    static let highestTrackableValue: UInt64 = 60_000_000
    var histogram = HistogramRecorder.makeHistogram()

    init() {}

    static func makeHistogram() -> Histogram<UInt64> {
        Histogram<UInt64>(highestTrackableValue: highestTrackableValue, numberOfSignificantValueDigits: .three)
    }

    mutating func record(nanoseconds: UInt64) {
        _ = histogram.record(min((nanoseconds + 500) / 1000, Self.highestTrackableValue))
    }
}

/// The outcome of `rpcctl bench`, as text, as JSON and as an exit status.
struct BenchReport {
    var configuration: RPCLoadConfiguration
    var result: RPCLoadResult<HistogramRecorder>
    var merged: Histogram<UInt64>

    init(configuration: RPCLoadConfiguration, result: RPCLoadResult<HistogramRecorder>) {
        self.configuration = configuration
        self.result = result
        var merged = HistogramRecorder.makeHistogram()
        for recorder in result.recorders { merged.add(recorder.histogram) }
        self.merged = merged
    }

    struct Latency {
        var p50, p90, p99, p999, max, mean: Double
    }

    /// Latency percentiles in milliseconds (all zero when nothing was recorded).
    var latency: Latency {
        guard merged.totalCount > 0 else { return Latency(p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0) }
        func ms(_ percentile: Double) -> Double { Double(merged.valueAtPercentile(percentile)) / 1000 }
        return Latency(
            p50: ms(50), p90: ms(90), p99: ms(99), p999: ms(99.9), max: Double(merged.max) / 1000,
            mean: merged.mean / 1000)
    }

    static func header(_ configuration: RPCLoadConfiguration) -> String {
        "bench \(configuration.method) on \(configuration.endpoint): \(configuration.connections) connections × depth "
            + "\(configuration.depth), \(Terminal.seconds(seconds(configuration.duration))) s after "
            + "\(Terminal.seconds(seconds(configuration.warmup))) s warm-up, \(configuration.threads) client threads"
    }

    var text: String {
        let latency = latency
        func ms(_ value: Double) -> String { Terminal.format(value, digits: 3) }
        return """
            calls/s       \(Terminal.format(result.callsPerSecond, digits: 1))
            calls         \(result.calls) (\(result.errors) error replies)
            latency ms    p50 \(ms(latency.p50))  p90 \(ms(latency.p90))  p99 \(ms(latency.p99))  \
            p999 \(ms(latency.p999))  max \(ms(latency.max))  mean \(ms(latency.mean))
            connection failures: \(result.connectionFailures.count)

            """
    }

    /// Keys: calls_per_second, calls, errors, duration_seconds, connections, depth, latency_ms.
    var json: JSONValue {
        let latency = latency
        return [
            "calls_per_second": Terminal.number(result.callsPerSecond, digits: 1),
            "calls": .number(result.calls),
            "errors": .number(result.errors),
            "duration_seconds": Terminal.number(Self.seconds(result.duration), digits: 3),
            "connections": .number(configuration.connections),
            "depth": .number(configuration.depth),
            "latency_ms": [
                "p50": Terminal.number(latency.p50, digits: 3),
                "p90": Terminal.number(latency.p90, digits: 3),
                "p99": Terminal.number(latency.p99, digits: 3),
                "p999": Terminal.number(latency.p999, digits: 3),
                "max": Terminal.number(latency.max, digits: 3),
                "mean": Terminal.number(latency.mean, digits: 3),
            ],
        ]
    }

    /// Whether any connection was established (else there is nothing to report but the failure).
    var anyConnection: Bool { !result.recorders.isEmpty }

    /// Reports failures on stderr and throws the exit status: 69 if no connection could be made, 1 if some
    /// connection failed, every call errored, or nothing was answered.
    func checkOutcome() throws {
        let failures = result.connectionFailures
        if !failures.isEmpty {
            let established = configuration.connections - failures.count
            Terminal.error("\(failures.count) of \(configuration.connections) connections failed: \(failures[0])")
            if established <= 0 || result.recorders.isEmpty {
                Terminal.note("is rpcd running at \(configuration.endpoint)?")
                throw ExitStatus.unavailable
            }
            throw ExitStatus.remoteError
        }
        if result.calls == 0 {
            Terminal.error("no call was answered in the measured \(Terminal.seconds(Self.seconds(configuration.duration))) s")
            throw ExitStatus.remoteError
        }
        if result.errors == result.calls {
            Terminal.error("every call failed; first error reply: \(result.firstError ?? "?")")
            throw ExitStatus.remoteError
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
