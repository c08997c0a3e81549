/// One metric family rpcd exports: its name (Prometheus conventions: `rpcd_` prefix, base units, `_total` for
/// counters), what it means (the `# HELP` line, and docs/OPERATIONS.md's table, which a test checks against this
/// list), its type and its labels. Every label's values are bounded by the configuration (services, methods,
/// listeners, events, handlers) or by a fixed list of reasons, never by what a peer sends.
///
/// This list is the one place a metric's name is spelled: components make their series from these values.
package struct RPCMetricFamily: Sendable, Hashable {
    package enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    package let name: String
    package let kind: Kind
    package let help: String
    package let labels: [String]

    init(_ name: String, _ kind: Kind, _ help: String, labels: [String] = []) {
        self.name = name
        self.kind = kind
        self.help = help
        self.labels = labels
    }
}

extension RPCMetricFamily {
    // Calls
    package static let calls = Self(
        "rpcd_calls_total", .counter,
        "Calls answered, by method and outcome (ok, or the JSON-RPC error code; other for codes no method documents)",
        labels: ["service", "method", "outcome"])
    package static let callDuration = Self(
        "rpcd_call_duration_seconds", .histogram, "Time from routing a call to its answer, by method",
        labels: ["service", "method"])
    package static let callsInFlight = Self("rpcd_calls_in_flight", .gauge, "Calls routed and not yet answered")
    package static let accessDenied = Self(
        "rpcd_access_denied_total", .counter, "Calls refused by the access rules, by service", labels: ["service"])

    // Connections and bytes
    package static let connectionsOpen = Self(
        "rpcd_connections_open", .gauge, "Connections open now, by listener", labels: ["listener"])
    package static let connectionsAccepted = Self(
        "rpcd_connections_accepted_total", .counter, "Connections accepted, by listener", labels: ["listener"])
    package static let connectionsRefused = Self(
        "rpcd_connections_refused_total", .counter, "Connections closed at once, by listener and reason",
        labels: ["listener", "reason"])
    package static let receivedBytes = Self(
        "rpcd_received_bytes_total", .counter, "Bytes read from connections, by listener", labels: ["listener"])
    package static let sentBytes = Self(
        "rpcd_sent_bytes_total", .counter, "Bytes of frames written to connections, by listener", labels: ["listener"])
    package static let framesRefused = Self(
        "rpcd_frames_refused_total", .counter, "Frames refused, by reason", labels: ["reason"])
    package static let tlsHandshakes = Self(
        "rpcd_tls_handshakes_total", .counter, "TLS handshakes, by listener and result (ok, or why it failed)",
        labels: ["listener", "result"])
    package static let tlsResumedHandshakes = Self(
        "rpcd_tls_resumed_handshakes_total", .counter,
        "TLS handshakes that resumed a session (a ticket the client kept), by listener", labels: ["listener"])

    // Budget
    package static let bufferedBytes = Self(
        "rpcd_buffered_bytes", .gauge, "Bytes held for peers now, all together (MaxBufferedBytes= bounds it)")
    package static let bufferedBytesLimit = Self(
        "rpcd_buffered_bytes_limit", .gauge, "What all peers together may make rpcd hold (MaxBufferedBytes=)")
    package static let largestPeerShare = Self(
        "rpcd_largest_peer_buffered_bytes", .gauge,
        "Bytes held now for the peer that holds the most (rpcd.metrics names the heaviest peers to administrators)")
    package static let peers = Self("rpcd_peers", .gauge, "Peers with a connection open")

    // Events
    package static let eventsPublished = Self("rpcd_events_published_total", .counter, "Events published")
    package static let eventsDelivered = Self(
        "rpcd_events_delivered_total", .counter, "Event notifications written to subscribers")
    package static let eventsLost = Self(
        "rpcd_events_lost_total", .counter, "Event notifications dropped from full subscription queues (MaxQueuedEvents=)")
    package static let subscriptions = Self("rpcd_subscriptions", .gauge, "Event subscriptions open now")

    // Modules
    package static let handlerUp = Self(
        "rpcd_handler_up", .gauge,
        "1 for an isolated handler's current state, 0 for the others (starting, running, restarting, failed, stopping)",
        labels: ["service", "state"])
    package static let handlerRestarts = Self(
        "rpcd_handler_restarts_total", .counter, "Module host processes restarted, by the service they serve",
        labels: ["service"])
    package static let handlerCrashes = Self(
        "rpcd_handler_crashes_total", .counter, "Module host processes that ended unexpectedly, by the service they serve",
        labels: ["service"])

    // The daemon
    package static let reloads = Self(
        "rpcd_reloads_total", .counter, "Configuration reloads, by result (ok, failed)", labels: ["result"])
    package static let buildInfo = Self(
        "rpcd_build_info", .gauge, "Always 1; the labels say which rpcd runs", labels: ["version", "protocol"])

    // The process (the names every Prometheus client library uses, from /proc/self)
    package static let processCPU = Self("process_cpu_seconds_total", .counter, "User and system CPU time spent in seconds")
    package static let processRSS = Self("process_resident_memory_bytes", .gauge, "Resident memory size in bytes")
    package static let processVirtual = Self("process_virtual_memory_bytes", .gauge, "Virtual memory size in bytes")
    package static let processOpenFDs = Self("process_open_fds", .gauge, "Number of open file descriptors")
    package static let processMaxFDs = Self("process_max_fds", .gauge, "Maximum number of open file descriptors")
    package static let processStart = Self(
        "process_start_time_seconds", .gauge, "Start time of the process since the Unix epoch in seconds")

    /// Every family rpcd exports, in the order docs/OPERATIONS.md lists them.
    package static let all: [Self] = [
        calls, callDuration, callsInFlight, accessDenied,
        connectionsOpen, connectionsAccepted, connectionsRefused, receivedBytes, sentBytes, framesRefused, tlsHandshakes,
        tlsResumedHandshakes,
        bufferedBytes, bufferedBytesLimit, largestPeerShare, peers,
        eventsPublished, eventsDelivered, eventsLost, subscriptions,
        handlerUp, handlerRestarts, handlerCrashes,
        reloads, buildInfo,
        processCPU, processRSS, processVirtual, processOpenFDs, processMaxFDs, processStart,
    ]
}
