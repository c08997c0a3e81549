import Foundation
import NIOCore
import RPCCore
import RPCJSON

/// The built-in `rpcd` service: `rpcd.ping` (liveness, answered on the event loop) and `rpcd.info`
/// (version, uptime, listeners, services and counters).
public struct DaemonService: RPCService {
    private let state: RPCServerState
    private let statistics: RPCStatistics
    private static let pong = ByteBuffer(string: #""pong""#)

    public init(state: RPCServerState, statistics: RPCStatistics) {
        self.state = state
        self.statistics = statistics
    }

    public let descriptor = RPCServiceDescriptor(
        name: "rpcd", version: RPCDaemonVersion.version, summary: "The daemon itself",
        methods: [
            RPCMethodDescriptor(
                name: "ping", summary: "Answers \"pong\"",
                result: RPCParameterDescriptor(name: "pong", schema: ["type": "string", "const": "pong"])),
            RPCMethodDescriptor(
                name: "info", summary: "Version, uptime, listeners, services and counters",
                result: RPCParameterDescriptor(name: "info", schema: ["type": "object"])),
        ])

    public func handle(_ call: RPCCall, responder: RPCResponder) {
        switch call.method.name {
        case "ping": responder.succeed(rawJSON: Self.pong)
        default: responder.succeed(info(call.registry))
        }
    }

    private func info(_ registry: RPCServiceRegistry) -> JSONValue {
        let uptime = ContinuousClock.now - state.startTime
        let uptimeSeconds = Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18
        return [
            "version": .string(RPCDaemonVersion.version),
            "protocol": .number(RPCDaemonVersion.protocolVersion),
            "pid": .number(Int(ProcessInfo.processInfo.processIdentifier)),
            "uptime_seconds": .number((uptimeSeconds * 1000).rounded() / 1000),
            "started": .string(ISO8601DateFormatter().string(from: state.startDate)),
            "listeners": .array(state.listeners.map { .string($0.description) }),
            "services": .array(registry.services.map {
                ["name": .string($0.descriptor.name), "version": .string($0.descriptor.version),
                 "fingerprint": .string($0.descriptor.fingerprint), "methods": .number($0.descriptor.methods.count)]
            }),
            "connections": [
                "open": .number(statistics.openConnections.value),
                "accepted": .number(statistics.acceptedConnections.value),
                "rejected": .number(statistics.rejectedConnections.value),
            ],
            "calls": ["total": .number(statistics.calls.value), "errors": .number(statistics.errors.value)],
        ]
    }
}
