package import RPCProtocol

/// The settings of rpcd, read from `/etc/rpcd/rpcd.conf` and its drop-ins (docs/CONFIG.md).
///
/// Every setting has a default, so an empty file (or `ServerConfiguration.defaults`) is a working
/// configuration. Loading fails with a `ConfigError` naming file and line for syntax errors,
/// unknown sections or keys, and values that do not parse or are out of range; nothing is ever
/// silently ignored except `X-` extension sections and keys.
///
/// The file's meaning lives in `schema`: one `INISection` per section, each a table of keys.
/// Adding a section means a settings property here, a file declaring its `INISection`, and an
/// entry in `schema.sections`.
package struct ServerConfiguration: Hashable, Sendable {
    /// `[Server] Listen=`: the addresses to listen on, in order. May be empty (every `Listen=`
    /// cleared); whether that is acceptable is for the daemon to decide.
    package var listen: [RPCEndpoint]
    /// `[Server] Threads=`: event-loop threads; nil means `auto` (one per core, decided by the daemon).
    package var threads: Int?
    /// `[Server]`'s limits (`MaxFrameSize=` ... `IdleTimeout=`), passed down whole to the server.
    package var limits: ConnectionLimits
    /// `[Server] LogLevel=`: the least severe level that is logged.
    package var logLevel: LogLevelSetting
    /// `[Server] LogCalls=`: a log entry for every completed call, not only failed and slow ones.
    package var logCalls: Bool
    /// `[Server] Metrics=`: export the metrics (`/metrics`) and time calls (docs/OPERATIONS.md); `no` exports
    /// nothing and keeps no histograms (what `make bench` compares against), but the counters stay true.
    package var metrics: Bool
    /// `[Server] SlowCallThreshold=`: calls taking longer are logged as slow; nil logs none as slow.
    package var slowCallThreshold: Duration?
    /// `[Server] ShutdownGracePeriod=`: how long a stop waits for calls in flight before closing
    /// connections anyway. Must stay below the unit's `TimeoutStopSec=`.
    package var shutdownGracePeriod: Duration
    /// `[Avahi]`: DNS-SD advertising.
    package var avahi: AvahiSettings
    /// `[Access]`: the access rules of every service that has none of its own.
    package var access: RPCAccessRule
    /// `[TLS]`: the files of `tls://` and `https://` listeners.
    package var tls: TLSSettings
    /// `[HTTP]`: what web pages may do with the HTTP listeners.
    package var http: HTTPSettings
    /// `[WideArea]`: DNS-SD in a unicast zone, by signed DNS UPDATE.
    package var wideArea = WideAreaSettings()

    /// A configuration with the given settings; omitted ones take their defaults.
    package init(
        listen: [RPCEndpoint] = [.unix(path: RPCEndpoint.defaultSocketPath), .tcp(host: "127.0.0.1", port: RPCEndpoint.defaultPort)],
        threads: Int? = nil,
        limits: ConnectionLimits = ConnectionLimits(),
        logLevel: LogLevelSetting = .info,
        logCalls: Bool = false,
        metrics: Bool = true,
        slowCallThreshold: Duration? = RPCLimits.slowCallThreshold.defaultValue,
        shutdownGracePeriod: Duration = RPCLimits.shutdownGracePeriod.defaultValue,
        avahi: AvahiSettings = AvahiSettings(),
        access: RPCAccessRule = .protectedDefault,
        tls: TLSSettings = TLSSettings(),
        http: HTTPSettings = HTTPSettings()
    ) {
        self.listen = listen
        self.threads = threads
        self.limits = limits
        self.logLevel = logLevel
        self.logCalls = logCalls
        self.metrics = metrics
        self.slowCallThreshold = slowCallThreshold
        self.shutdownGracePeriod = shutdownGracePeriod
        self.avahi = avahi
        self.access = access
        self.tls = tls
        self.http = http
    }

    /// Every setting at its default: listen on /run/rpcd/rpcd.sock and 127.0.0.1:7390, and so on.
    package static let defaults = ServerConfiguration()

    /// Where the packaged daemon reads its configuration.
    package static let defaultPath = "/etc/rpcd/rpcd.conf"

    /// The sections and keys of rpcd.conf.
    package static let schema = INISchema(defaults: defaults, sections: [serverSection, avahiSection, wideAreaSection, accessSection, tlsSection, httpSection])

    /// Reads `path` and the drop-ins in `path.d/*.conf` (see `INIDocument.loadWithDropIns`) and
    /// applies them to the defaults. Throws if the main file is missing or anything is invalid.
    package static func load(path: String = defaultPath) throws(ConfigError) -> ServerConfiguration {
        try ServerConfiguration(documents: INIDocument.loadWithDropIns(main: path))
    }

    /// The defaults with the assignments of `documents` applied in order (later ones win).
    package init(documents: [INIDocument]) throws(ConfigError) {
        self = try Self.schema.settings(from: documents)
        try checkTLS(documents)
        try checkWideArea(documents)
    }

    /// The configuration as rpcd.conf text listing every key (one `Listen=` line per address),
    /// for `rpcd --check-config`. Parsing it gives an equal configuration back.
    package func rendered() -> String {
        Self.schema.render(self)
    }
}
