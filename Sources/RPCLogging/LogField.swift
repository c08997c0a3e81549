/// The metadata keys of rpcd's log entries, defined once here and documented in docs/LOGGING.md (a test
/// checks that every one is). The journald backend writes them as upper-case journal fields
/// (`rpcd_method` becomes `RPCD_METHOD`), so `journalctl -u rpcd RPCD_METHOD=calc.add` filters on them.
///
/// Every log call in rpcd uses these names; a new kind of datum gets a new constant here (and a row in
/// docs/LOGGING.md), never a string literal at the call site.
package enum LogField {
    // MARK: Connections and calls

    /// Connection number, unique within one run of the daemon.
    package static let connectionID = "rpcd_conn_id"
    /// The peer: `ADDRESS:PORT` for TCP, `unix` for Unix-domain sockets.
    package static let peer = "rpcd_peer"
    /// The names of a TLS peer's verified client certificate (`client:NAME` in access rules), comma-separated.
    package static let tlsClient = "rpcd_tls_client"
    /// The listener a connection arrived on, in `Listen=` form.
    package static let listener = "rpcd_listener"
    /// Every listener, comma-separated, in `Listen=` form (start-up).
    package static let listeners = "rpcd_listeners"
    /// Sockets systemd passed (socket activation), as `NAME(fd N)`, comma-separated.
    package static let sockets = "rpcd_sockets"
    /// Service name (`calc`).
    package static let service = "rpcd_service"
    /// Every service, comma-separated (start-up, reload).
    package static let services = "rpcd_services"
    /// What other hosts may call, by the access rules and the listeners (start-up, reload).
    package static let exposure = "rpcd_exposure"
    /// Full method name (`calc.add`).
    package static let method = "rpcd_method"
    /// Full event name (`kv.changed`), on subscription entries.
    package static let event = "rpcd_event"
    /// Why the server ended a subscription (`service removed`, `access rules changed`).
    package static let reason = "rpcd_reason"
    /// The request id as JSON text; absent for notifications.
    package static let callID = "rpcd_call_id"
    /// Wall time from routing a call to its reply, in microseconds.
    package static let durationMicroseconds = "rpcd_duration_usec"
    /// The JSON-RPC error code a call ended with.
    package static let errorCode = "rpcd_error_code"
    /// A description of an internal error (never sent to clients).
    package static let error = "rpcd_error"
    /// The limit that was reached (a count or a size).
    package static let limit = "rpcd_limit"
    /// How many entries like this one were dropped by rate limiting since the previous one was logged.
    package static let suppressed = "rpcd_suppressed"

    // MARK: Modules and handlers

    /// A plugin module's file name.
    package static let module = "rpcd_module"
    /// A module's own version string.
    package static let moduleVersion = "rpcd_module_version"
    /// A service's interface fingerprint (16 hex digits).
    package static let fingerprint = "rpcd_fingerprint"
    /// A handler's name (its file name without `.conf`).
    package static let handler = "rpcd_handler"
    /// A configuration or handler file; for a refused handler, `FILE:LINE` to fix.
    package static let file = "rpcd_file"
    /// The host's token for one module call (diagnostics of a module that answers twice).
    package static let callToken = "rpcd_call_token"

    // MARK: The daemon

    /// A log level (after a change).
    package static let logLevel = "rpcd_log_level"
    /// The log level before a change.
    package static let previousLogLevel = "rpcd_previous_log_level"
    /// The watchdog interval systemd asked for, in microseconds.
    package static let watchdogMicroseconds = "rpcd_watchdog_usec"
    /// A resource limit's value before rpcd changed it.
    package static let previousValue = "rpcd_from"
    /// A resource limit's value after rpcd changed it.
    package static let newValue = "rpcd_to"

    // MARK: DNS-SD advertising

    /// A DNS-SD instance name as advertised (`calc on build-7`).
    package static let instance = "rpcd_instance"
    /// The instance name that collided, before Avahi's alternative.
    package static let previousInstance = "rpcd_instance_previous"
    /// `local` or `network`: where the colliding name came from.
    package static let collision = "rpcd_collision"
    /// The TCP port an advertised instance points to.
    package static let port = "rpcd_port"
    /// The host name avahi-daemon publishes.
    package static let host = "rpcd_host"
    /// Milliseconds from losing avahi-daemon to its return.
    package static let afterMilliseconds = "rpcd_after_msec"
    /// A network interface name (`Interfaces=`).
    package static let interface = "rpcd_interface"
    /// Where a client connects (`RPCClient`'s reconnects and failover): an address as `RPCEndpoint` prints it.
    package static let endpoint = "rpcd_endpoint"

    /// Wide-area DNS-SD: the DNS server that takes rpcd's updates (`[WideArea] Server=`), as ADDRESS:PORT.
    package static let dnsServer = "rpcd_dns_server"
    /// Wide-area DNS-SD: the zone updated (`[WideArea] Domain=`).
    package static let dnsZone = "rpcd_dns_zone"
    /// Wide-area DNS-SD: the DNS response code of a refused update (`NOTAUTH`, `REFUSED`, `YXDOMAIN`...).
    package static let dnsRcode = "rpcd_dns_rcode"
    /// Wide-area DNS-SD: the TSIG error the server reported (`BADSIG`, `BADKEY`, `BADTIME`), when there is one.
    package static let tsigError = "rpcd_tsig_error"
    /// Wide-area DNS-SD: the TSIG key's name (never its secret).
    package static let tsigKey = "rpcd_tsig_key"
    /// Wide-area DNS-SD: when a host's lease ended, Unix seconds (`WideAreaLease`).
    package static let leaseExpires = "rpcd_lease_expires"
    /// Wide-area DNS-SD: an update lease in seconds, as an RFC 9664 server granted it.
    package static let leaseSeconds = "rpcd_lease_seconds"

    /// A module host process's pid (handlers with `Isolation=process`).
    package static let pid = "rpcd_pid"
    /// How a module host process ended: a signal's name (`SIGSEGV`), or `exit N`.
    package static let termination = "rpcd_termination"
    /// The cgroup rpcd runs module hosts beneath (start-up), as a path in the cgroup2 mount.
    package static let cgroup = "rpcd_cgroup"

    /// The journal's own `MESSAGE_ID` field: one of `LogMessageID`'s ids, on lifecycle entries only.
    package static let messageID = "message_id"

    /// Every field above, for documentation checks.
    package static let all: [String] = [
        connectionID, peer, tlsClient, listener, listeners, sockets, service, services, exposure, method, event, reason, callID,
        durationMicroseconds, errorCode, error, limit, suppressed, module, moduleVersion, fingerprint, handler, file,
        callToken, logLevel, previousLogLevel, watchdogMicroseconds, previousValue, newValue, instance,
        previousInstance, collision, port, host, afterMilliseconds, interface, endpoint, dnsServer, dnsZone, dnsRcode, tsigError, tsigKey, leaseExpires, leaseSeconds, pid, termination, cgroup, messageID,
    ]
}
