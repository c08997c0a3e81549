import RPCJSON
import RPCProtocol

/// Why a client operation failed. `description` is a sentence for humans (rpcctl prints it after `rpcctl: `).
public enum RPCClientError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The server answered with a JSON-RPC error object: rpcd's own codes are `RPCError.Code`'s, a module's
    /// are documented by the module.
    case remote(RPCError)
    /// No connection could be made; `reason` is short and lower-case, e.g. "connection refused".
    case connectFailed(endpoint: String, reason: String)
    /// The connection closed (or was closed) while the call was pending, or before it could be sent.
    case connectionClosed
    /// No reply arrived in time (connect, call or `sendRaw` timeout). A call's server was told to cancel it.
    case timedOut
    /// The calling task was cancelled while the call was pending; the server was told to cancel the call.
    case cancelled
    /// The server sent something that is not a valid JSON-RPC reply, or the call could not be encoded.
    case protocolViolation(String)
    /// The TLS session failed once connected: typically the server refusing the client's certificate, or its
    /// absence, which TLS 1.3 reports only after the client's side of the handshake is done.
    case tlsFailed(String)
    /// The server ended a subscription (`rpc.subscriptionEnded`): its service was removed on a reload, or the
    /// access rules no longer allow it. `reason` is the server's.
    case subscriptionEnded(event: String, reason: String)

    public var description: String {
        switch self {
        case .remote(let error):
            var text = "\(error.message) (\(error.code))"
            if let data = error.data { text += "; data: \(String(decoding: data.serialized(), as: UTF8.self))" }
            return text
        case .connectFailed(let endpoint, let reason):
            return "cannot connect to \(endpoint): \(reason)"
        case .connectionClosed:
            return "the connection was closed before a reply arrived"
        case .timedOut:
            return "timed out waiting for a reply"
        case .cancelled:
            return "the call was cancelled"
        case .protocolViolation(let detail):
            return "protocol violation: \(detail)"
        case .tlsFailed(let reason):
            return "TLS: \(reason)"
        case .subscriptionEnded(let event, let reason):
            return "the server ended the subscription to \(event): \(reason)"
        }
    }
}
