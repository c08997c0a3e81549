import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Short, lower-case reasons for connection failures ("connection refused", "timed out after 10 s").
package enum ConnectFailure {
    package static func reason(for error: any Error) -> String {
        switch error {
        case let error as IOError:
            return describe(errno: error.errnoCode)
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first {
                return reason(for: first.error)
            }
            if error.dnsAError != nil || error.dnsAAAAError != nil {
                return "cannot resolve host name '\(error.host)'"
            }
            return "no address found for '\(error.host)'"
        case ChannelError.connectTimeout(let amount):
            return "timed out after \(describe(amount))"
        case let error as SocketAddressError:
            switch error {
            case .unixDomainSocketPathTooLong: return "the socket path is too long"
            case .unknown(let host, _): return "cannot resolve host name '\(host)'"
            default: return "\(error)"
            }
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return "TLS: the server's certificate does not carry the name asked for (the host, or --server-name)"
        case NIOSSLError.handshakeFailed(let reason) where "\(reason)".contains("CERTIFICATE_VERIFY_FAILED"):
            return "TLS: the server's certificate is not signed by a trusted CA (--ca), or has expired"
        case NIOSSLError.handshakeFailed(let reason) where "\(reason)".contains("WRONG_VERSION_NUMBER"):
            return "TLS: the server did not answer in TLS (a plain listener? then leave out tls:// and --tls)"
        case NIOSSLError.handshakeFailed(let reason):
            return "TLS handshake failed: \(reason)"
        default:
            return "\(error)"
        }
    }

    /// `strerror` text with a lower-case first letter: "connection refused", "no such file or directory".
    static func describe(errno code: Int32) -> String {
        guard let text = strerror(code).map({ String(cString: $0) }), !text.isEmpty else { return "error \(code)" }
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    static func describe(_ amount: TimeAmount) -> String {
        let milliseconds = amount.nanoseconds / 1_000_000
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000) s" }
        return "\(milliseconds) ms"
    }
}
