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
        case let error where TLSFailure.reason(for: error) != nil:
            return "TLS: " + TLSFailure.reason(for: error)!
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
