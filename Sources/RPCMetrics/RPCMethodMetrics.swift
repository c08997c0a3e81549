import Prometheus
import RPCProtocol
import Synchronization

/// The series of one declared method, made when the registry that routes to it is built (and found again, not
/// made twice, when a reload builds the next one): a call increments a counter and records its duration, and
/// looks nothing up by name. Thread-safe and lock-free: counters and histogram (`RPCDurationHistogram`) are atomics.
///
/// The outcome label is `ok` or an error code, and codes are bounded: rpcd's own (`RPCError.Code`) and those the
/// method documents keep their number, anything else a module answers is `other`. The error series are made on
/// a method's first error with that code (errors are the cold path), so a healthy method exports one counter.
package final class RPCMethodMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let service: String
    private let method: String
    private let documentedCodes: Set<Int>
    /// Nil for the fixed labels of calls that route nowhere: they never succeed, run or get refused.
    private let ok: Counter?
    private let duration: RPCDurationHistogram?
    private let inFlight: RPCInFlightCount
    /// Refusals by the access rules, of the method's service (one series per service, shared by its methods).
    private let denied: Counter?
    private let failures = Mutex<[Int: Counter]>([:])

    /// 10 µs to 10 s, three buckets a decade: fine enough for a quantile of a built-in call (tens of µs) and of
    /// a module call that waits on a disk or a network.
    package static let buckets: [Duration] = [
        .microseconds(10), .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250),
        .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    init(
        registry: PrometheusCollectorRegistry, service: String, method: String, inFlight: RPCInFlightCount, documentedCodes: Set<Int>,
        duration: RPCDurationHistogram? = nil
    ) {
        self.registry = registry
        self.service = service
        self.method = method
        self.documentedCodes = documentedCodes
        self.inFlight = inFlight
        // Without a histogram, the fixed labels of calls that route nowhere: they never succeed, run or get refused.
        self.duration = duration
        guard duration != nil else {
            ok = nil
            denied = nil
            return
        }
        ok = registry.makeCounter(
            name: RPCMetricFamily.calls.name, labels: [("service", service), ("method", method), ("outcome", "ok")],
            help: RPCMetricFamily.calls.help)
        denied = registry.makeCounter(
            name: RPCMetricFamily.accessDenied.name, labels: [("service", service)], help: RPCMetricFamily.accessDenied.help)
    }

    /// A call the access rules refused (answered -32007 without running).
    package func refused() {
        denied?.increment()
        failure(RPCError.Code.accessDenied).increment()
    }

    /// A call was routed to the method and may answer later: it is in flight until `ended`. (A call answered
    /// at once, before anything else could look, is never counted in flight.)
    package func started() {
        inFlight.calls.wrappingAdd(1, ordering: .relaxed)
    }

    /// A call counted by `started` was answered.
    package func ended() {
        inFlight.calls.wrappingSubtract(1, ordering: .relaxed)
    }

    /// A call answered with its result after `nanoseconds`.
    package func succeeded(nanoseconds: Int64) {
        ok?.increment()
        duration?.record(nanoseconds: nanoseconds)
    }

    package func succeeded(after elapsed: Duration) {
        ok?.increment()
        duration?.record(elapsed)
    }

    /// A call answered with the error `code` after `nanoseconds`.
    package func failed(code: Int, nanoseconds: Int64) {
        duration?.record(nanoseconds: nanoseconds)
        failure(code).increment()
    }

    /// A call answered with the error `code` after `elapsed` (nil: it never ran, as a refused call).
    package func failed(code: Int, after elapsed: Duration?) {
        if let elapsed { duration?.record(elapsed) }
        failure(code).increment()
    }

    /// The outcome label of `code`.
    package func outcome(_ code: Int) -> String {
        RPCError.Code.messages[code] != nil || documentedCodes.contains(code) ? "\(code)" : "other"
    }

    private func failure(_ code: Int) -> Counter {
        let label = outcome(code)
        let key = label == "other" ? Int.min : code
        return failures.withLock { failures in
            if let counter = failures[key] { return counter }
            let counter = registry.makeCounter(
                name: RPCMetricFamily.calls.name, labels: [("service", service), ("method", method), ("outcome", label)],
                help: RPCMetricFamily.calls.help)
            failures[key] = counter
            return counter
        }
    }
}


/// Calls routed and not yet answered, all methods together: a relaxed integer add per call (a swift-prometheus
/// gauge is a compare-and-swap loop on a double, twice per call), exported as `rpcd_calls_in_flight` when scraped.
package final class RPCInFlightCount: Sendable {
    package let calls = Atomic<Int>(0)
}
