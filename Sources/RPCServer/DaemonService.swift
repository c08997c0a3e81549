import Foundation
import JSONRPC
import Logging
import NIOCore
import RPCCore
import RPCJSON
import RPCLogging
import RPCProtocol

/// The built-in `rpcd` service: `rpcd.ping` (liveness, answered on the event loop), `rpcd.info`
/// (version, uptime, listeners, services and counters), and `rpcd.logLevel`/`rpcd.setLogLevel` (the log
/// level every handler reads, changed at once until the next reload or restart).
public struct DaemonService: RPCService {
    private let state: RPCServerState
    private let statistics: RPCStatistics
    private let logLevel: LogLevelControl
    private static let pong = ByteBuffer(string: #""pong""#)
    private static let levelNames = Logger.Level.allCases.map(\.rawValue)

    public init(state: RPCServerState, statistics: RPCStatistics, logLevel: LogLevelControl = LogLevelControl()) {
        self.state = state
        self.statistics = statistics
        self.logLevel = logLevel
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
            RPCMethodDescriptor(
                name: "logLevel", summary: "The current log level",
                result: RPCParameterDescriptor(name: "level", schema: ["enum": .array(levelNames.map { .string($0) })])),
            RPCMethodDescriptor(
                name: "setLogLevel",
                summary: "Sets the log level until the next reload or restart; returns the previous level",
                params: [RPCParameterDescriptor(name: "level", schema: ["enum": .array(levelNames.map { .string($0) })])],
                result: RPCParameterDescriptor(name: "previous", schema: ["enum": .array(levelNames.map { .string($0) })])),
        ])

    public func handle(_ call: RPCCall, responder: RPCResponder) {
        switch call.method.name {
        case "ping": responder.succeed(rawJSON: Self.pong)
        case "logLevel": responder.succeed(.string(logLevel.level.rawValue))
        case "setLogLevel":
            do {
                let params = try call.paramsValue()
                guard let name = (params[0] ?? params["level"])?.stringValue,
                      let level = Logger.Level(rawValue: name.lowercased())
                else {
                    throw RPCError.invalidParams("expected 'level', one of \(Self.levelNames.joined(separator: ", "))")
                }
                let previous = logLevel.level
                logLevel.level = level
                call.logger.notice(
                    "Log level changed", metadata: [LogField.logLevel: "\(level)", LogField.previousLogLevel: "\(previous)"])
                responder.succeed(.string(previous.rawValue))
            } catch {
                responder.fail(error)
            }
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
