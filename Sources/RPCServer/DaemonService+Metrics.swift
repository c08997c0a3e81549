import RPCCore
import RPCJSON
import RPCMetrics
import RPCProtocol

/// `rpcd.metrics`: the metrics a scrape of `/metrics` gets, as one JSON object shaped for `rpcctl top` (and
/// scripts), plus what has no place in Prometheus labels: the heaviest peers (for administrators only). Read from
/// the series themselves (`RPCMetrics.snapshot()`), never from the exposition's text. Counters are totals since
/// start; a viewer takes rates from two snapshots. docs/OPERATIONS.md describes the object.
extension DaemonService {
    /// How many of the heaviest peers a snapshot names: enough for a screen, bounded whatever a scan opens.
    static let reportedPeers = 10

    var uptimeSeconds: Double {
        let uptime = ContinuousClock.now - state.startTime
        let seconds = Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18
        return (seconds * 1000).rounded() / 1000
    }

    /// `peers` names the heaviest peers (addresses, uids) only to a caller that `Allow=` of the `rpcd` service
    /// admits, the administrators (shipped: root and group rpcd, on the Unix socket): who uses the daemon is not
    /// every local user's business. Others get the aggregate figures in `budget` (docs/SECURITY.md).
    func metricsSnapshot(_ registry: RPCServiceRegistry, peer: RPCPeer) -> JSONValue {
        let metrics = statistics.snapshot()
        let process = ProcessMetrics.read()
        let heaviest = statistics.heaviestPeers(Self.reportedPeers)
        let budget = statistics.budget
        // One entry per declared method (also those a reload removed), and the fixed labels of unknown and
        // invalid calls once there were such calls.
        let methods = metrics.methods.compactMap { method -> JSONValue? in
            let declared = method.service != RPCMetrics.unknown && method.service != RPCMetrics.none
            guard declared || method.calls > 0 else { return nil }
            let duration = method.duration
            return [
                "service": .string(method.service), "method": .string(method.method), "calls": .number(method.calls),
                "outcomes": .object(Dictionary(method.outcomes.map { ($0.outcome, .number($0.calls)) }) { $1 }),
                "duration_count": .number(duration?.count ?? 0),
                "duration_sum_seconds": .number(duration?.sumSeconds ?? 0),
                "duration_buckets": .array((duration?.buckets ?? []).map { [.number($0.bound), .number($0.count)] }),
            ]
        }
        let listeners = metrics.listeners.map { listener -> JSONValue in
            [
                "listener": .string(listener.listener), "open": .number(listener.open),
                "accepted": .number(listener.accepted), "refused": .number(listener.refused),
                "received_bytes": .number(listener.receivedBytes), "sent_bytes": .number(listener.sentBytes),
            ]
        }
        let handlers = registry.services.compactMap { service -> JSONValue? in
            guard let reporting = service as? any RPCServiceStatusReporting else { return nil }
            return ["service": .string(service.descriptor.name), "host": reporting.status]
        }
        var snapshot: [String: JSONValue] = [
            "version": .string(RPCDaemonVersion.version),
            "uptime_seconds": .number(uptimeSeconds),
            "metrics": .bool(statistics.metrics.isEnabled),
            "methods": .array(methods),
            "calls_in_flight": .number(metrics.callsInFlight),
            "listeners": .array(listeners),
            "budget": [
                "buffered_bytes": .number(budget.bufferedBytes), "limit": .number(budget.limit),
                "peers": .number(statistics.peerCount), "largest_peer_bytes": .number(heaviest.first?.bytes ?? 0),
            ],
            "frames_refused": .object(Dictionary(statistics.framesRefused.map { ($0.reason, .number($0.frames)) }) { $1 }),
            "events": [
                "subscriptions": .number(events.subscriptions.value), "published": .number(events.published.value),
                "delivered": .number(events.delivered.value), "lost": .number(events.lost.value),
            ],
            "handlers": .array(handlers),
            "process": [
                "cpu_seconds": .number(process.cpuSeconds ?? 0),
                "resident_memory_bytes": .number(Int(process.residentBytes ?? 0)),
                "open_fds": .number(Int(process.openFDs ?? 0)),
            ],
        ]
        if registry.access.allowsEveryMethod(peer, service: Self.name) {
            snapshot["peers"] = .array(heaviest.map { use -> JSONValue in
                ["peer": .string(use.peer), "buffered_bytes": .number(use.bytes), "connections": .number(use.connections),
                 "calls": .number(use.calls)]
            })
        }
        return .object(snapshot)
    }
}
