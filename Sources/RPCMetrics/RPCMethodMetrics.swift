import RPCProtocol
package import Synchronization

/// The series of one declared method, made the first time a registry of services routes to it and the same
/// instance for every registry after (a reload counts on): a call increments a counter and records its
/// duration, and looks nothing up by name. Thread-safe; every count is an atomic.
///
/// The outcome label is `ok` or an error code, and codes are bounded: rpcd's own (`RPCError.Code`) and those the
/// method documents keep their number, anything else a module answers is `other`. The error series are made on
/// a method's first error with that code (errors are the cold path), so a healthy method exports one counter.
///
/// The counters are kept whatever `Metrics=` says (`rpcd.info` reports them); the histogram only with metrics
/// on.
package final class RPCMethodMetrics: Sendable {
    package let service: String
    package let method: String
    private let registry: RPCMetricRegistry
    /// The codes the method documents, replaced when a reload declares the method again.
    private let documentedCodes: Mutex<Set<Int>>
    /// Nil for the fixed labels of calls that route nowhere: they never succeed, run or get refused.
    private let ok: RPCCounter?
    /// Nil also with metrics off.
    private let duration: RPCDurationHistogram?
    private let inFlight: RPCInFlightCount
    /// Refusals by the access rules, of the method's service (one series per service, shared by its methods).
    private let denied: RPCCounter?
    /// The error series made so far, by code (`Int.min` for `other`), in the order they were made.
    private let failures = Mutex<[(key: Int, outcome: String, counter: RPCCounter)]>([])

    /// 10 µs to 10 s, three buckets a decade: fine enough for a quantile of a built-in call (tens of µs) and of
    /// a module call that waits on a disk or a network.
    package static let buckets: [Duration] = [
        .microseconds(10), .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250),
        .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    init(
        registry: RPCMetricRegistry, service: String, method: String, inFlight: RPCInFlightCount,
        documentedCodes: Set<Int>, routed: Bool = true, timed: Bool = true
    ) {
        self.registry = registry
        self.service = service
        self.method = method
        self.documentedCodes = Mutex(documentedCodes)
        self.inFlight = inFlight
        guard routed else {
            ok = nil
            duration = nil
            denied = nil
            return
        }
        ok = registry.counter(.calls, [service, method, "ok"])
        duration = timed ? registry.histogram(.callDuration, [service, method], buckets: Self.buckets) : nil
        denied = registry.counter(.accessDenied, [service])
    }

    func declare(documentedCodes codes: Set<Int>) {
        documentedCodes.withLock { $0 = codes }
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
        RPCError.Code.messages[code] != nil || documentedCodes.withLock({ $0.contains(code) }) ? "\(code)" : "other"
    }

    /// The method's figures now.
    package var snapshot: RPCMetricsSnapshot.Method {
        var outcomes: [(outcome: String, calls: Int)] = ok.map { [("ok", $0.value)] } ?? []
        for failure in failures.withLock({ $0 }) { outcomes.append((failure.outcome, failure.counter.value)) }
        return RPCMetricsSnapshot.Method(service: service, method: method, outcomes: outcomes, duration: duration?.snapshot)
    }

    private func failure(_ code: Int) -> RPCCounter {
        let label = outcome(code)
        let key = label == "other" ? Int.min : code
        return failures.withLock { failures in
            if let existing = failures.first(where: { $0.key == key }) { return existing.counter }
            let counter = registry.counter(.calls, [service, method, label])
            failures.append((key, label, counter))
            return counter
        }
    }
}

/// Calls routed and not yet answered, all methods together: a relaxed integer add per call, exported as
/// `rpcd_calls_in_flight`.
package final class RPCInFlightCount: Sendable {
    package let calls = Atomic<Int>(0)
}
