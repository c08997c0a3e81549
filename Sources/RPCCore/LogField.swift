/// The metadata keys of every log entry that concerns a connection or a call, defined once here and
/// documented in docs/LOGGING.md. The journald backend writes them as upper-case journal fields
/// (`rpcd_method` becomes `RPCD_METHOD`), so `journalctl -u rpcd RPCD_METHOD=calc.add` filters on them.
public enum LogField {
    /// Connection number, unique within one run of the daemon.
    public static let connectionID = "rpcd_conn_id"
    /// The peer: `ADDRESS:PORT` for TCP, `unix` for Unix-domain sockets.
    public static let peer = "rpcd_peer"
    /// The listener a connection arrived on, in `Listen=` form.
    public static let listener = "rpcd_listener"
    /// Service name (`calc`).
    public static let service = "rpcd_service"
    /// Full method name (`calc.add`).
    public static let method = "rpcd_method"
    /// The request id as JSON text; absent for notifications.
    public static let callID = "rpcd_call_id"
    /// Wall time from routing a call to its reply, in microseconds.
    public static let durationMicroseconds = "rpcd_duration_usec"
    /// The JSON-RPC error code a call ended with.
    public static let errorCode = "rpcd_error_code"
    /// A description of an internal error (never sent to clients).
    public static let error = "rpcd_error"
    /// A plugin module's file name.
    public static let module = "rpcd_module"
    /// A handler's name (its file name without `.conf`).
    public static let handler = "rpcd_handler"
    /// The journal's own `MESSAGE_ID` field: one of `LogMessageID`'s ids, on lifecycle entries only.
    public static let messageID = "message_id"
    /// A DNS-SD instance name as advertised (`calc on build-7`).
    public static let instance = "rpcd_instance"
}
