/// The metadata keys of rpcd's log entries, defined once here and documented in docs/LOGGING.md (a test
/// checks that every one is). The journald backend writes them as upper-case journal fields
/// (`rpcd_method` becomes `RPCD_METHOD`), so `journalctl -u rpcd RPCD_METHOD=calc.add` filters on them.
///
/// Every log call in rpcd uses these names; a new kind of datum gets a new constant here (and a row in
/// docs/LOGGING.md), never a string literal at the call site.
public enum LogField {
    // MARK: Connections and calls

    /// Connection number, unique within one run of the daemon.
    public static let connectionID = "rpcd_conn_id"
    /// The peer: `ADDRESS:PORT` for TCP, `unix` for Unix-domain sockets.
    public static let peer = "rpcd_peer"
    /// The names of a TLS peer's verified client certificate (`client:NAME` in access rules), comma-separated.
    public static let tlsClient = "rpcd_tls_client"
    /// The listener a connection arrived on, in `Listen=` form.
    public static let listener = "rpcd_listener"
    /// Every listener, comma-separated, in `Listen=` form (start-up).
    public static let listeners = "rpcd_listeners"
    /// Sockets systemd passed (socket activation), as `NAME(fd N)`, comma-separated.
    public static let sockets = "rpcd_sockets"
    /// Service name (`calc`).
    public static let service = "rpcd_service"
    /// Every service, comma-separated (start-up, reload).
    public static let services = "rpcd_services"
    /// What other hosts may call, by the access rules and the listeners (start-up, reload).
    public static let exposure = "rpcd_exposure"
    /// Full method name (`calc.add`).
    public static let method = "rpcd_method"
    /// Full event name (`kv.changed`), on subscription entries.
    public static let event = "rpcd_event"
    /// Why the server ended a subscription (`service removed`, `access rules changed`).
    public static let reason = "rpcd_reason"
    /// The request id as JSON text; absent for notifications.
    public static let callID = "rpcd_call_id"
    /// Wall time from routing a call to its reply, in microseconds.
    public static let durationMicroseconds = "rpcd_duration_usec"
    /// The JSON-RPC error code a call ended with.
    public static let errorCode = "rpcd_error_code"
    /// A description of an internal error (never sent to clients).
    public static let error = "rpcd_error"
    /// The limit that was reached (a count or a size).
    public static let limit = "rpcd_limit"
    /// How many entries like this one were dropped by rate limiting since the previous one was logged.
    public static let suppressed = "rpcd_suppressed"

    // MARK: Modules and handlers

    /// A plugin module's file name.
    public static let module = "rpcd_module"
    /// A module's own version string.
    public static let moduleVersion = "rpcd_module_version"
    /// A service's interface fingerprint (16 hex digits).
    public static let fingerprint = "rpcd_fingerprint"
    /// A handler's name (its file name without `.conf`).
    public static let handler = "rpcd_handler"
    /// A configuration or handler file.
    public static let file = "rpcd_file"
    /// The host's token for one module call (diagnostics of a module that answers twice).
    public static let callToken = "rpcd_call_token"

    // MARK: The daemon

    /// A log level (after a change).
    public static let logLevel = "rpcd_log_level"
    /// The log level before a change.
    public static let previousLogLevel = "rpcd_previous_log_level"
    /// The watchdog interval systemd asked for, in microseconds.
    public static let watchdogMicroseconds = "rpcd_watchdog_usec"
    /// A resource limit's value before rpcd changed it.
    public static let previousValue = "rpcd_from"
    /// A resource limit's value after rpcd changed it.
    public static let newValue = "rpcd_to"

    // MARK: DNS-SD advertising

    /// A DNS-SD instance name as advertised (`calc on build-7`).
    public static let instance = "rpcd_instance"
    /// The instance name that collided, before Avahi's alternative.
    public static let previousInstance = "rpcd_instance_previous"
    /// `local` or `network`: where the colliding name came from.
    public static let collision = "rpcd_collision"
    /// The TCP port an advertised instance points to.
    public static let port = "rpcd_port"
    /// The host name avahi-daemon publishes.
    public static let host = "rpcd_host"
    /// Milliseconds from losing avahi-daemon to its return.
    public static let afterMilliseconds = "rpcd_after_msec"
    /// A network interface name (`Interfaces=`).
    public static let interface = "rpcd_interface"
    /// Where a client connects (`RPCClient`'s reconnects and failover): an address as `RPCEndpoint` prints it.
    public static let endpoint = "rpcd_endpoint"

    /// Wide-area DNS-SD: the DNS server that takes rpcd's updates (`[WideArea] Server=`), as ADDRESS:PORT.
    public static let dnsServer = "rpcd_dns_server"
    /// Wide-area DNS-SD: the zone updated (`[WideArea] Domain=`).
    public static let dnsZone = "rpcd_dns_zone"
    /// Wide-area DNS-SD: the DNS response code of a refused update (`NOTAUTH`, `REFUSED`, `YXDOMAIN`...).
    public static let dnsRcode = "rpcd_dns_rcode"
    /// Wide-area DNS-SD: the TSIG error the server reported (`BADSIG`, `BADKEY`, `BADTIME`), when there is one.
    public static let tsigError = "rpcd_tsig_error"
    /// Wide-area DNS-SD: the TSIG key's name (never its secret).
    public static let tsigKey = "rpcd_tsig_key"

    /// A module host process's pid (handlers with `Isolation=process`).
    public static let pid = "rpcd_pid"
    /// How a module host process ended: a signal's name (`SIGSEGV`), or `exit N`.
    public static let termination = "rpcd_termination"

    /// The journal's own `MESSAGE_ID` field: one of `LogMessageID`'s ids, on lifecycle entries only.
    public static let messageID = "message_id"

    /// Every field above, for documentation checks.
    public static let all: [String] = [
        connectionID, peer, tlsClient, listener, listeners, sockets, service, services, exposure, method, event, reason, callID,
        durationMicroseconds, errorCode, error, limit, suppressed, module, moduleVersion, fingerprint, handler, file,
        callToken, logLevel, previousLogLevel, watchdogMicroseconds, previousValue, newValue, instance,
        previousInstance, collision, port, host, afterMilliseconds, interface, endpoint, dnsServer, dnsZone, dnsRcode, tsigError, tsigKey, pid, termination, messageID,
    ]
}
