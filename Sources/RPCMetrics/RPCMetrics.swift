import enum CoreMetrics.MetricsSystem
import Prometheus
import RPCProtocol
import Synchronization

/// rpcd's metrics: its own registry of series (`RPCMetricRegistry`: atomics per family and labels) holding
/// every series of `RPCMetricFamily`, the handles the hot path counts through (`RPCMethodMetrics`,
/// `RPCListenerMetrics`), and what is read at scrape time (`addCollector`, the process metrics).
///
/// Two kinds of readers, one set of numbers: the Prometheus exposition (`exposition()`, for `GET /metrics` and
/// `rpcd.metrics format=prometheus`) writes the series as text; `rpcd.info`, `rpcd.metrics` and the status
/// line take a typed `snapshot()` that loads the same atomics, with no text rendered or parsed on an event loop.
///
/// Series are made where the configuration declares what they count (a listener bound, a method registered, an
/// event declared), never per call: the hot path holds its handles and only increments. Thread-safe.
///
/// `Metrics=no` (`enabled: false`) exports nothing and times nothing (no histograms), but the counters are
/// kept: `rpcd.info` and the status line report true counts either way.
package final class RPCMetrics: Sendable {
    package let registry = RPCMetricRegistry()
    package let isEnabled: Bool
    /// Run before every exposition: they set the gauges whose values live elsewhere (the handlers' states).
    private let collectors = Mutex<[@Sendable (RPCMetrics) -> Void]>([])
    /// The series of an unknown method and of a message that is no call, made once.
    package let unknownMethod: RPCMethodMetrics
    package let invalidMessage: RPCMethodMetrics
    package let inFlight = RPCInFlightCount()
    /// Every method's and listener's handles, in the order made, for `snapshot()`.
    private let handles = Mutex<(methods: [RPCMethodMetrics], byName: [String: RPCMethodMetrics], listeners: [RPCListenerMetrics])>(
        ([], [:], []))
    /// What libraries record through the swift-metrics API (`bootstrapSwiftMetrics`), appended to the exposition.
    private let libraries = PrometheusCollectorRegistry()

    package init(enabled: Bool = true) {
        self.isEnabled = enabled
        unknownMethod = RPCMethodMetrics(
            registry: registry, service: Self.unknown, method: Self.unknown, inFlight: inFlight, documentedCodes: [],
            routed: false)
        invalidMessage = RPCMethodMetrics(
            registry: registry, service: Self.none, method: Self.invalid, inFlight: inFlight, documentedCodes: [],
            routed: false)
        handles.withLock { $0.methods = [unknownMethod, invalidMessage] }
        registry.gauge(.buildInfo, [RPCDaemonVersion.version, "\(RPCDaemonVersion.protocolVersion)"]).set(to: 1)
        let inFlight = self.inFlight
        registry.export(.callsInFlight) { inFlight.calls.load(ordering: .relaxed) }
    }

    /// Makes swift-metrics' backend for the whole process a Prometheus registry whose text `exposition()`
    /// appends (once, by the daemon): a library that records through the swift-metrics API (`Counter(label:)`,
    /// `Timer(label:)`) shows up in the same scrape. rpcd's own series are not made through it.
    package func bootstrapSwiftMetrics() {
        guard isEnabled else { return }
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: libraries))
    }

    /// The label values calls get when their method names nothing configured: what a peer sends never becomes a
    /// label.
    package static let unknown = "(unknown)"
    package static let none = "(none)"
    package static let invalid = "(invalid)"

    /// The handles of one declared method: the same instance each time it is declared again (a reload).
    package func method(service: String, method: String, documentedCodes: Set<Int>) -> RPCMethodMetrics {
        let key = service + "." + method
        return handles.withLock { handles in
            if let existing = handles.byName[key] {
                existing.declare(documentedCodes: documentedCodes)
                return existing
            }
            let metrics = RPCMethodMetrics(
                registry: registry, service: service, method: method, inFlight: inFlight,
                documentedCodes: documentedCodes, timed: isEnabled)
            handles.byName[key] = metrics
            handles.methods.append(metrics)
            return metrics
        }
    }

    /// The series of the listener on `address` (with its TLS handshakes when `tls`).
    package func listener(_ address: String, tls: Bool) -> RPCListenerMetrics {
        let listener = RPCListenerMetrics(registry: registry, listener: address, tls: tls)
        handles.withLock { handles in
            handles.listeners.removeAll { $0.listener == address }
            handles.listeners.append(listener)
        }
        return listener
    }

    /// Exports a count kept elsewhere (an atomic that a component needs to read itself) as the counter `family`.
    package func export(_ family: RPCMetricFamily, counter count: @escaping @Sendable () -> Int) {
        registry.export(family, value: count)
    }

    /// Exports a value kept elsewhere as the gauge `family`, read at each scrape.
    package func export(_ family: RPCMetricFamily, gauge value: @escaping @Sendable () -> Int) {
        registry.export(family, value: value)
    }

    package func counter(_ family: RPCMetricFamily, _ labels: [String] = []) -> RPCCounter {
        registry.counter(family, labels)
    }

    package func gauge(_ family: RPCMetricFamily, _ labels: [String] = []) -> RPCGauge {
        registry.gauge(family, labels)
    }

    /// `collector` runs before each exposition (on the scraping thread): for values kept elsewhere that only
    /// the exposition shows.
    package func addCollector(_ collector: @escaping @Sendable (RPCMetrics) -> Void) {
        guard isEnabled else { return }
        collectors.withLock { $0.append(collector) }
    }

    /// The calls and connections counted now, read from the series themselves.
    package func snapshot() -> RPCMetricsSnapshot {
        let (methods, listeners) = handles.withLock { ($0.methods, $0.listeners) }
        return RPCMetricsSnapshot(
            methods: methods.map(\.snapshot), listeners: listeners.map(\.snapshot),
            callsInFlight: inFlight.calls.load(ordering: .relaxed))
    }

    /// The Prometheus text exposition format (version 0.0.4) of every series, with the process metrics unless
    /// `includingProcess` is false (they read /proc: CPU, memory and every open descriptor). Empty with
    /// metrics off.
    package func exposition(includingProcess: Bool = true) -> String {
        guard isEnabled else { return "" }
        for collector in collectors.withLock({ $0 }) { collector(self) }
        var text = ""
        text.reserveCapacity(1 << 16)
        registry.write(RPCMetricFamily.all, into: &text)
        if includingProcess { ProcessMetrics.read().render(into: &text) }
        text += libraries.emitToString()
        return text
    }
}
