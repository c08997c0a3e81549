public import RPCJSON

/// The wire form of a stopping server's cut, shared by the server (which sends it) and the client (which
/// acts on it): `{"jsonrpc":"2.0","method":"rpc.goingAway","params":{"lastId":ID,"accepted":N}}`, the first N
/// frames the client sent on the connection accepted, every later one not run (docs/PROTOCOL.md §4
/// "Shutdown").
public enum RPCGoingAway {
    /// The notification's method.
    public static let method = "rpc.goingAway"

    /// How many frames the server accepted, from the notification's `params`; nil when they do not say.
    public static func accepted(in params: JSONValue?) -> Int? {
        guard let accepted = params?["accepted"]?.intValue, accepted >= 0 else { return nil }
        return accepted
    }
}
