/// The wire form of cancellation, shared by the server (which runs it) and the client (which sends it):
/// `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":<the call's id>}}` (docs/PROTOCOL.md).
public enum RPCCancellation {
    /// The built-in method that cancels a call of the same connection.
    public static let method = "rpc.cancel"
}
