/// rpcd's release version and the wire-protocol version it speaks (see docs/PROTOCOL.md).
public enum RPCDaemonVersion {
    public static let version = "0.1.0"
    /// Bumped only when a client written against docs/PROTOCOL.md would break.
    public static let protocolVersion = 1
}
