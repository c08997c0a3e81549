#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOCore
package import RPCBinding
package import RPCCore
import RPCJSON
package import RPCLogging
import RPCMetrics
import RPCProtocol

/// The built-in `rpcd` service: `rpcd.ping` (liveness, answered on the event loop), `rpcd.info`
/// (version, uptime, listeners, services and counters), `rpcd.metrics` (the metrics as JSON, for `rpcctl top`), `rpcd.logLevel`/`rpcd.setLogLevel` (the log
/// level every handler reads, changed at once until the next reload or restart), and `rpcd.reload` (a reload
/// whose outcome the caller waits for). Declared and bound like a module's methods (`RPCTypedService`).
package struct DaemonService: RPCTypedService {
    let state: RPCServerState
    let statistics: RPCStatistics
    private let logLevel: LogLevelControl
    let events: RPCEventHub
    /// Where `rpcd.reload` queues its reload; nil where nothing runs reloads (it then answers -32013).
    private let reloads: ReloadRequests?

    package init(
        state: RPCServerState, statistics: RPCStatistics, events: RPCEventHub = RPCEventHub(),
        logLevel: LogLevelControl = LogLevelControl(), reloads: ReloadRequests? = nil
    ) {
        self.state = state
        self.statistics = statistics
        self.events = events
        self.logLevel = logLevel
        self.reloads = reloads
    }

    package static let name = "rpcd"
    package static let version = RPCDaemonVersion.version
    package static let summary = "The daemon itself"
    package let descriptor = Self.makeDescriptor()

    private static let levelSchema: JSONValue = ["enum": .array(Logger.Level.allCases.map { .string($0.rawValue) })]

    package static let methods: [RPCServiceMethod<DaemonService>] = [
        .constant(
            "ping", summary: "Answers \"pong\"", result: RPCParam("pong", schema: ["type": "string", "const": "pong"]),
            json: ByteBuffer(string: #""pong""#)),
        .method(
            "info", summary: "Version, uptime, listeners, services and counters",
            result: RPCParam("info", schema: ["type": "object"]), flags: .readOnly
        ) { service, call in service.info(call.registry, peer: call.connection.peer) },
        .method(
            "metrics",
            summary: "Calls, latencies, connections, the heaviest peers, events and handlers, as rpcctl top shows them; with format \"prometheus\", the text a scrape of /metrics gets",
            params: [RPCParam("format", schema: ["enum": ["json", "prometheus"]], optional: true)],
            result: RPCParam("metrics", schema: ["type": ["object", "string"]]), flags: .readOnly
        ) { (service, params: MetricsFormat, call) -> JSONValue in
            params.format == "prometheus"
                ? .string(service.statistics.metrics.exposition())
                : service.metricsSnapshot(call.registry, peer: call.connection.peer)
        },
        .method("logLevel", summary: "The current log level", result: RPCParam("level", schema: levelSchema), flags: .readOnly) {
            service, _ in service.logLevel.level.rawValue
        },
        .method(
            "setLogLevel", summary: "Sets the log level until the next reload or restart; returns the previous level",
            params: [RPCParam("level", schema: levelSchema)], result: RPCParam("previous", schema: levelSchema)
        ) { (service, params: SetLogLevel, call) in
            let previous = service.logLevel.level
            service.logLevel.level = params.level
            call.logger.notice(
                "Log level changed", metadata: [LogField.logLevel: "\(params.level)", LogField.previousLogLevel: "\(previous)"])
            return previous.rawValue
        },
        .method(
            "reload", summary: "Reloads the configuration as SIGHUP does, and answers when the reload is over",
            result: RPCParam("reloaded", schema: ["type": "object"])
        ) { service, _ in
            guard let reloads = service.reloads else { throw RPCError.reloadFailed("this rpcd does not reload") }
            return try await reloads.reload().result()
        }.documenting([.reloadFailed("the previous configuration keeps serving")]),
    ]

    private struct MetricsFormat: Decodable {
        var format: String?
    }

    private struct SetLogLevel: Decodable {
        var level: Logger.Level
    }

    /// `services` lists what `rpc.discover` shows the same caller: the services with a method it may call or an
    /// event it may subscribe to, with how many of those (fingerprints stay those of the whole service).
    private func info(_ registry: RPCServiceRegistry, peer: RPCPeer) -> JSONValue {
        let access = registry.access
        let metrics = statistics.snapshot()
        // `rpcd_calls_total` counts calls once answered, with their outcome; `calls.total` counts them once
        // routed, as it always has, so the calls still in flight are added.
        let answered = metrics.callsAnswered
        let listeners = metrics.listeners
        func total(_ figure: (RPCMetricsSnapshot.Listener) -> Int) -> Int { listeners.reduce(0) { $0 + figure($1) } }
        return [
            "version": .string(RPCDaemonVersion.version),
            "protocol": .number(RPCDaemonVersion.protocolVersion),
            "swift_runtime": .string("\(RPCSwiftVersion.compiled)"),
            "pid": .number(Int(ProcessInfo.processInfo.processIdentifier)),
            "uptime_seconds": .number(uptimeSeconds),
            "started": .string(state.startDate.formatted(.iso8601)),
            "listeners": .array(state.listeners.map { .string($0.description) }),
            "services": .array(registry.services.compactMap { service -> JSONValue? in
                let descriptor = service.descriptor
                let methods = descriptor.methods.filter { access.allows(peer, service: descriptor.name, method: $0) }.count
                let events = access.allowsSubscribing(peer, service: descriptor.name) ? descriptor.events.count : 0
                guard methods > 0 || events > 0 else { return nil }
                var entry: [String: JSONValue] = [
                    "name": .string(descriptor.name), "version": .string(descriptor.version),
                    "fingerprint": .string(descriptor.fingerprint), "methods": .number(methods), "events": .number(events),
                ]
                if let reporting = service as? any RPCServiceStatusReporting { entry["host"] = reporting.status }
                return .object(entry)
            }),
            "connections": [
                "open": .number(total(\.open)), "accepted": .number(total(\.accepted)),
                "rejected": .number(total(\.refused)),
            ],
            "limits": [
                "max_frame_size": .number(state.limits.maxFrameSize),
                "max_calls_per_connection": .number(state.limits.maxCallsPerConnection),
            ],
            "frames": [
                "buffered_bytes": .number(statistics.budget.bufferedBytes),
                "refused": .number(statistics.framesRefused.reduce(0) { $0 + $1.frames }),
            ],
            "tls": [
                "handshakes": .number(total(\.tlsHandshakes)), "resumed": .number(total(\.tlsResumed)),
            ],
            "calls": [
                "total": .number(answered + metrics.callsInFlight), "errors": .number(answered - metrics.calls("ok")),
                "denied": .number(metrics.calls("\(RPCError.Code.accessDenied)")),
                "cancelled": .number(metrics.calls("\(RPCError.Code.callCancelled)")),
            ],
            "events": [
                "subscriptions": .number(events.subscriptions.value), "published": .number(events.published.value),
                "delivered": .number(events.delivered.value), "lost": .number(events.lost.value),
            ],
        ]
    }
}
