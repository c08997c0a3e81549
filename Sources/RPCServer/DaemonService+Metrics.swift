import RPCCore
import RPCJSON
import RPCMetrics
import RPCProtocol

/// `rpcd.metrics`: the metrics a scrape of `/metrics` gets, as one JSON object shaped for `rpcctl top` (and
/// scripts), plus what has no place in Prometheus labels: the heaviest peers. Counters are totals since start;
/// a viewer takes rates from two snapshots. docs/OPERATIONS.md describes the object.
extension DaemonService {
    /// How many of the heaviest peers a snapshot names: enough for a screen, bounded whatever a scan opens.
    static let reportedPeers = 10

    var uptimeSeconds: Double {
        let uptime = ContinuousClock.now - state.startTime
        let seconds = Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18
        return (seconds * 1000).rounded() / 1000
    }

    func metricsSnapshot(_ registry: RPCServiceRegistry) -> JSONValue {
        let samples = statistics.snapshot()
        let calls = RPCMetricFamily.calls.name
        let duration = RPCMetricFamily.callDuration.name
        // One entry per method with a series: the declared ones, and the fixed labels of unknown and invalid calls.
        var methods: [JSONValue] = []
        for count in samples.series(duration + "_count") {
            guard let service = count.labels["service"], let method = count.labels["method"] else { continue }
            let labels = ["service": service, "method": method]
            var outcomes: [String: JSONValue] = [:]
            for sample in samples.series(calls, labels) {
                if let outcome = sample.labels["outcome"] { outcomes[outcome] = .number(Int(sample.value)) }
            }
            let buckets = samples.series(duration + "_bucket", labels).compactMap { sample -> JSONValue? in
                guard let le = sample.labels["le"], let bound = Double(le), bound.isFinite else { return nil }
                return [.number(bound), .number(Int(sample.value))]
            }
            methods.append([
                "service": .string(service), "method": .string(method),
                "calls": .number(Int(samples.sum(calls, labels))), "outcomes": .object(outcomes),
                "duration_count": .number(Int(count.value)),
                "duration_sum_seconds": .number(samples.sum(duration + "_sum", labels)),
                "duration_buckets": .array(buckets),
            ])
        }
        for (service, method) in [(RPCMetrics.unknown, RPCMetrics.unknown), (RPCMetrics.none, RPCMetrics.invalid)] {
            let labels = ["service": service, "method": method]
            let total = samples.sum(calls, labels)
            guard total > 0 else { continue }
            methods.append([
                "service": .string(service), "method": .string(method), "calls": .number(Int(total)),
                "outcomes": .object([:]), "duration_count": 0, "duration_sum_seconds": 0, "duration_buckets": [],
            ])
        }
        let listeners = samples.series(RPCMetricFamily.connectionsAccepted.name).compactMap { sample -> JSONValue? in
            guard let listener = sample.labels["listener"] else { return nil }
            let labels = ["listener": listener]
            return [
                "listener": .string(listener),
                "open": .number(Int(samples.sum(RPCMetricFamily.connectionsOpen.name, labels))),
                "accepted": .number(Int(sample.value)),
                "refused": .number(Int(samples.sum(RPCMetricFamily.connectionsRefused.name, labels))),
                "received_bytes": .number(Int(samples.sum(RPCMetricFamily.receivedBytes.name, labels))),
                "sent_bytes": .number(Int(samples.sum(RPCMetricFamily.sentBytes.name, labels))),
            ]
        }
        let peers = statistics.heaviestPeers(Self.reportedPeers).map { use -> JSONValue in
            ["peer": .string(use.peer), "buffered_bytes": .number(use.bytes), "connections": .number(use.connections),
             "calls": .number(use.calls)]
        }
        var refusals: [String: JSONValue] = [:]
        for sample in samples.series(RPCMetricFamily.framesRefused.name) {
            if let reason = sample.labels["reason"] { refusals[reason] = .number(Int(sample.value)) }
        }
        let handlers = registry.services.compactMap { service -> JSONValue? in
            guard let reporting = service as? any RPCServiceStatusReporting else { return nil }
            return ["service": .string(service.descriptor.name), "host": reporting.status]
        }
        return [
            "version": .string(RPCDaemonVersion.version),
            "uptime_seconds": .number(uptimeSeconds),
            "metrics": .bool(statistics.metrics.isEnabled),
            "methods": .array(methods),
            "calls_in_flight": .number(Int(samples.sum(RPCMetricFamily.callsInFlight.name))),
            "listeners": .array(listeners),
            "peers": .array(peers),
            "budget": [
                "buffered_bytes": .number(Int(samples.sum(RPCMetricFamily.bufferedBytes.name))),
                "limit": .number(Int(samples.sum(RPCMetricFamily.bufferedBytesLimit.name))),
            ],
            "frames_refused": .object(refusals),
            "events": [
                "subscriptions": .number(events.subscriptions.value), "published": .number(events.published.value),
                "delivered": .number(events.delivered.value), "lost": .number(events.lost.value),
            ],
            "handlers": .array(handlers),
            "process": [
                "cpu_seconds": .number(samples.sum(RPCMetricFamily.processCPU.name)),
                "resident_memory_bytes": .number(Int(samples.sum(RPCMetricFamily.processRSS.name))),
                "open_fds": .number(Int(samples.sum(RPCMetricFamily.processOpenFDs.name))),
            ],
        ]
    }
}
