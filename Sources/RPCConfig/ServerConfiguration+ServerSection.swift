import RPCProtocol

extension ServerConfiguration {
    /// `[Server]`: listeners, resource limits and logging of the daemon itself.
    /// The order here is the order `rendered()` writes the keys in.
    static let serverSection = INISection<ServerConfiguration>(
        "Server",
        keys: [
            .endpoints("Listen", \.listen),
            .value("Threads", \.threads, parse: parseThreads, format: { $0.map(String.init) ?? "auto" }),
            .size("MaxFrameSize", \.limits.maxFrameSize, in: RPCLimits.maxFrameSize.range),
            .integer("MaxBatchLength", \.limits.maxBatchLength, in: RPCLimits.maxBatchLength.range),
            .integer("MaxNestingDepth", \.limits.maxNestingDepth, in: RPCLimits.maxNestingDepth.range),
            .integer("MaxConnections", \.limits.maxConnections, in: RPCLimits.maxConnections.range),
            .integer("MaxConnectionsPerPeer", \.limits.maxConnectionsPerPeer, in: RPCLimits.maxConnectionsPerPeer.range),
            .integer("MaxCallsPerConnection", \.limits.maxCallsPerConnection, in: RPCLimits.maxCallsPerConnection.range),
            .integer(
                "MaxSubscriptionsPerConnection", \.limits.maxSubscriptionsPerConnection,
                in: RPCLimits.maxSubscriptionsPerConnection.range),
            .integer("MaxQueuedEvents", \.limits.maxQueuedEvents, in: RPCLimits.maxQueuedEvents.range),
            .size("MaxBufferedBytes", \.limits.maxBufferedBytes, in: RPCLimits.maxBufferedBytes.range),
            .size("MaxBufferedBytesPerPeer", \.limits.maxBufferedBytesPerPeer, in: RPCLimits.maxBufferedBytesPerPeer.range),
            .principals("Administrators", \.limits.administrators),
            .value(
                "FrameTimeout", \.limits.frameTimeout, parse: parseFrameTimeout, format: { ValueSyntax.formatTimeSpan($0) }),
            .timeSpan("IdleTimeout", \.limits.idleTimeout, in: RPCLimits.idleTimeout.range, zeroDisables: true),
            .logLevel("LogLevel", \.logLevel),
            .boolean("LogCalls", \.logCalls),
            .boolean("Metrics", \.metrics),
            .timeSpan("SlowCallThreshold", \.slowCallThreshold, in: RPCLimits.slowCallThreshold.range, zeroDisables: true),
            .value(
                "ShutdownGracePeriod", \.shutdownGracePeriod, parse: parseGracePeriod,
                format: { ValueSyntax.formatTimeSpan($0) }),
        ]
    )

    /// A finite time span in `RPCLimits.shutdownGracePeriod`'s range: the unit's stop timeout must outlast it.
    @Sendable private static func parseGracePeriod(_ entry: INIEntry) throws(ConfigError) -> Duration {
        guard let span = try entry.timeSpanValue(), RPCLimits.shutdownGracePeriod.range.contains(span) else {
            throw entry.error(
                "value \(entry.value) for \(entry.key)= is out of range: expected a time span from 0 to 25s (rpcd.service's TimeoutStopSec=30s must outlast it)")
        }
        return span
    }

    /// A finite time span in `RPCLimits.frameTimeout`'s range: a frame without a deadline could be trickled
    /// forever, so `infinity` is refused.
    @Sendable private static func parseFrameTimeout(_ entry: INIEntry) throws(ConfigError) -> Duration {
        guard let span = try entry.timeSpanValue(in: RPCLimits.frameTimeout.range) else {
            throw entry.error("value \(entry.value) for \(entry.key)= is out of range: a frame must have a finite deadline")
        }
        return span
    }

    /// `auto` (nil) or a thread count.
    @Sendable private static func parseThreads(_ entry: INIEntry) throws(ConfigError) -> Int? {
        if entry.value == "auto" { return nil }
        do {
            return try entry.integerValue(in: RPCLimits.threads.range)
        } catch {
            // The integer errors end in "expected an integer from 1 to 1024"; add the other choice.
            var error = error
            error.message += " or 'auto'"
            throw error
        }
    }
}
