import NIOSSL

/// What a TLS error means to the person at the client, in words that name the option to change. BoringSSL
/// reports by reason names inside its error text, which is what is matched here.
package enum TLSFailure {
    /// A lower-case sentence for a TLS error, or nil when `error` is not one.
    package static func reason(for error: any Error) -> String? {
        switch error {
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return "the server's certificate does not carry the name asked for (the host, or --server-name)"
        case NIOSSLError.uncleanShutdown:
            return nil  // the peer closed without saying so in TLS: a closed connection, not a TLS failure
        case NIOSSLError.handshakeFailed(let reason):
            return describe("\(reason)")
        case let error as BoringSSLError:
            return describe("\(error)")
        case let error as NIOSSLError:
            return "\(error)"
        default:
            return nil
        }
    }

    private static func describe(_ text: String) -> String {
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the server's certificate is not signed by a trusted CA (--ca), or has expired"
        }
        if text.contains("WRONG_VERSION_NUMBER") {
            return "the server did not answer in TLS (a plain listener? then leave out tls:// and --tls)"
        }
        if text.contains("CERTIFICATE_REQUIRED") {
            return "the server requires a client certificate (--cert and --key)"
        }
        if text.contains("ALERT_UNKNOWN_CA") || text.contains("ALERT_BAD_CERTIFICATE") || text.contains("ALERT_CERTIFICATE_UNKNOWN") {
            return "the server did not accept this client's certificate (is it signed by the server's ClientCA=?)"
        }
        return "handshake failed: \(text)"
    }
}
