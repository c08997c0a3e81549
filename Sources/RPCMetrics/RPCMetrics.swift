import enum CoreMetrics.MetricsSystem
import Prometheus
import RPCProtocol
import Synchronization

/// rpcd's metrics: a Prometheus collector registry (swift-prometheus, whose counters, gauges and histograms are
/// swift-metrics handlers) holding every series of `RPCMetricFamily`, made with its help text, plus what is read
/// at scrape time (`collect`, and the process metrics).
///
/// Series are made where the configuration declares what they count (a listener bound, a method registered, an
/// event declared), never per call: the hot path holds its handles (`RPCMethodMetrics`) and only increments.
/// Thread-safe; making a series takes the registry's lock, recording takes none.
///
/// Disabled (`Metrics=no`), nothing is made or recorded: `method(service:method:)` returns nil and the other
/// makers return handles that the registry does not export.
package final class RPCMetrics: Sendable {
    package let registry: PrometheusCollectorRegistry
    package let isEnabled: Bool
    /// Run before every exposition: they set the gauges whose values live elsewhere (the ledger's total, the
    /// handlers' states).
    private let collectors = Mutex<[@Sendable (RPCMetrics) -> Void]>([])
    /// The series of an unknown method and of a message that is no call, made once.
    package let unknownMethod: RPCMethodMetrics?
    package let invalidMessage: RPCMethodMetrics?
    package let inFlight = RPCInFlightCount()
    /// `rpcd_call_duration_seconds`, one per method, in the order made (rendered by `exposition`, not the
    /// registry: `RPCDurationHistogram` says why); found again by a reloaded registry's method.
    private let durations = Mutex<(order: [RPCDurationHistogram], byLabels: [String: RPCDurationHistogram])>(([], [:]))

    package init(enabled: Bool = true) {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        self.isEnabled = enabled
        if enabled {
            unknownMethod = RPCMethodMetrics(
                registry: registry, service: Self.unknown, method: Self.unknown, inFlight: inFlight, documentedCodes: [])
            invalidMessage = RPCMethodMetrics(
                registry: registry, service: Self.none, method: Self.invalid, inFlight: inFlight, documentedCodes: [])
            registry.makeGauge(
                name: RPCMetricFamily.buildInfo.name,
                labels: [("version", RPCDaemonVersion.version), ("protocol", "\(RPCDaemonVersion.protocolVersion)")],
                help: RPCMetricFamily.buildInfo.help
            ).set(to: 1)
        } else {
            unknownMethod = nil
            invalidMessage = nil
        }
        let inFlight = self.inFlight
        export(.callsInFlight, gauge: { inFlight.calls.load(ordering: .relaxed) })
    }

    /// Makes this registry swift-metrics' backend for the whole process (once, by the daemon): a library that
    /// records through the swift-metrics API (`Counter(label:)`, `Timer(label:)`) shows up in the same
    /// exposition. Its series have no help text; rpcd's own are made here with theirs.
    package func bootstrapSwiftMetrics() {
        guard isEnabled else { return }
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    }

    /// The label values calls get when their method names nothing configured: what a peer sends never becomes a
    /// label.
    package static let unknown = "(unknown)"
    package static let none = "(none)"
    package static let invalid = "(invalid)"

    /// The handles of one declared method; nil when metrics are off.
    package func method(service: String, method: String, documentedCodes: Set<Int>) -> RPCMethodMetrics? {
        guard isEnabled else { return nil }
        let made = RPCDurationHistogram(labels: [("service", service), ("method", method)], buckets: RPCMethodMetrics.buckets)
        let duration = durations.withLock { durations in
            if let existing = durations.byLabels[made.labels] { return existing }
            durations.order.append(made)
            durations.byLabels[made.labels] = made
            return made
        }
        return RPCMethodMetrics(
            registry: registry, service: service, method: method, inFlight: inFlight, documentedCodes: documentedCodes,
            duration: duration)
    }

    /// Exports a count kept elsewhere (an atomic that a component needs to read itself) as the counter
    /// `family`: each scrape adds what it grew by since the last one, so the exported counter is that count.
    package func export(_ family: RPCMetricFamily, counter count: @escaping @Sendable () -> Int) {
        let counter = self.counter(family)
        let exported = Mutex(0)
        addCollector { _ in
            let now = count()
            let delta = exported.withLock { exported in
                defer { exported = max(exported, now) }
                return max(0, now - exported)
            }
            if delta > 0 { counter.increment(by: Int64(delta)) }
        }
    }

    /// Exports a value kept elsewhere as the gauge `family`, read at each scrape.
    package func export(_ family: RPCMetricFamily, gauge value: @escaping @Sendable () -> Int) {
        let gauge = self.gauge(family)
        addCollector { _ in gauge.set(to: Double(value())) }
    }

    package func counter(_ family: RPCMetricFamily, _ labels: [(String, String)] = []) -> Counter {
        precondition(family.kind == .counter && labels.map(\.0) == family.labels, "\(family.name): \(labels)")
        return (isEnabled ? registry : Self.discarded).makeCounter(name: family.name, labels: labels, help: family.help)
    }

    package func gauge(_ family: RPCMetricFamily, _ labels: [(String, String)] = []) -> Gauge {
        precondition(family.kind == .gauge && labels.map(\.0) == family.labels, "\(family.name): \(labels)")
        return (isEnabled ? registry : Self.discarded).makeGauge(name: family.name, labels: labels, help: family.help)
    }

    /// Removes a gauge series that no longer describes anything (a handler's previous state).
    package func remove(_ gauge: Gauge) {
        registry.unregisterGauge(gauge)
    }

    /// Where the handles of a disabled instance go: never exported.
    private static let discarded = PrometheusCollectorRegistry()

    /// `collector` runs before each exposition (on the scraping thread): for values kept elsewhere.
    package func addCollector(_ collector: @escaping @Sendable (RPCMetrics) -> Void) {
        guard isEnabled else { return }
        collectors.withLock { $0.append(collector) }
    }

    /// The Prometheus text exposition format (version 0.0.4) of every series, with the process metrics unless
    /// `includingProcess` is false (they read /proc: CPU, memory and every open descriptor).
    package func exposition(includingProcess: Bool = true) -> String {
        guard isEnabled else { return "" }
        for collector in collectors.withLock({ $0 }) { collector(self) }
        var text = registry.emitToString()
        let durations = durations.withLock { $0.order }
        if !durations.isEmpty {
            let family = RPCMetricFamily.callDuration
            text += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) histogram\n"
            for duration in durations { duration.render(family.name, into: &text) }
        }
        if includingProcess { ProcessMetrics.read().render(into: &text) }
        return text
    }
}

