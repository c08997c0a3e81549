/// Where rpcd listens or where a client connects: a TCP host and port, the same with TLS, or a Unix-domain
/// socket.
///
/// The textual forms are the ones `Listen=` in rpcd.conf, `rpcd --listen` and `rpcctl --address` accept:
///
///     127.0.0.1:7390            IPv4 address and port
///     [::1]:7390                IPv6 address (in brackets) and port
///     localhost:7390            a host name and port (resolved when connecting or binding)
///     tls://0.0.0.0:7391        any of the TCP forms after tls://: the same frames inside TLS 1.2 or later
///     /run/rpcd/rpcd.sock       an absolute path: a Unix-domain stream socket
///
/// Parsing is pure: it checks form and range, never resolves names or touches the file system.
public enum RPCEndpoint: Hashable, Sendable {
    case tcp(host: String, port: Int)
    case tls(host: String, port: Int)
    case unix(path: String)

    /// The prefix that makes a TCP address a TLS one.
    public static let tlsScheme = "tls://"

    /// The TCP port rpcd uses when none is configured (see docs/CONFIG.md).
    public static let defaultPort = 7390

    /// The Unix socket the packaged daemon listens on and `rpcctl` tries first.
    public static let defaultSocketPath = "/run/rpcd/rpcd.sock"

    /// Parses one of the forms above; the error says what is wrong and what would be right.
    public init(parsing text: String) throws(RPCEndpointError) {
        let text = text.trimmingWhitespace()
        guard !text.isEmpty else { throw RPCEndpointError(text, "an address is empty") }
        if text.hasPrefix(Self.tlsScheme) {
            let inner = String(text.dropFirst(Self.tlsScheme.count))
            guard case .tcp(let host, let port) = try? RPCEndpoint(parsing: inner) else {
                throw RPCEndpointError(text, "expected tls://HOST:PORT or tls://[IPV6]:PORT, as in tls://0.0.0.0:7391")
            }
            self = .tls(host: host, port: port)
            return
        }
        if !text.hasPrefix("/"), let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") {
            throw RPCEndpointError(text, "unknown scheme '\(text[..<colon])://'; only tls:// is known")
        }

        if text.hasPrefix("/") {
            // sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL.
            guard text.utf8.count < 108 else {
                throw RPCEndpointError(text, "a Unix socket path must be shorter than 108 bytes")
            }
            self = .unix(path: text)
            return
        }

        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw RPCEndpointError(text, "an IPv6 address needs a closing ']', as in [::1]:\(Self.defaultPort)")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else {
                throw RPCEndpointError(text, "expected ':PORT' after the IPv6 address, as in [::1]:\(Self.defaultPort)")
            }
            portText = rest.dropFirst()
            guard host.contains(":") else {
                throw RPCEndpointError(text, "brackets are for IPv6 addresses only")
            }
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw RPCEndpointError(
                    text, "expected HOST:PORT, [IPV6]:PORT or an absolute socket path, as in 127.0.0.1:\(Self.defaultPort)")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else {
                throw RPCEndpointError(text, "an IPv6 address must be written in brackets, as in [::1]:\(Self.defaultPort)")
            }
        }
        guard !host.isEmpty else { throw RPCEndpointError(text, "the host is empty") }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCIIDigit), let port = Int(portText), (0...65535).contains(port)
        else {
            throw RPCEndpointError(text, "the port must be a number from 0 to 65535")
        }
        self = .tcp(host: String(host), port: port)
    }

    /// Whether this is a TCP endpoint (TLS or not) on a loopback address (such listeners are never advertised on
    /// the network).
    public var isLoopback: Bool {
        guard let (host, _) = tcpAddress else { return false }
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Host and port of a TCP endpoint, with or without TLS; nil for a Unix socket.
    public var tcpAddress: (host: String, port: Int)? {
        switch self {
        case .tcp(let host, let port), .tls(let host, let port): return (host, port)
        case .unix: return nil
        }
    }

    /// Whether connections to this endpoint use TLS.
    public var isTLS: Bool {
        if case .tls = self { return true }
        return false
    }
}

extension RPCEndpoint: CustomStringConvertible {
    /// The same text `init(parsing:)` accepts.
    public var description: String {
        switch self {
        case .tcp(let host, let port) where host.contains(":"): return "[\(host)]:\(port)"
        case .tcp(let host, let port): return "\(host):\(port)"
        case .tls(let host, let port): return Self.tlsScheme + RPCEndpoint.tcp(host: host, port: port).description
        case .unix(let path): return path
        }
    }
}

/// An address that does not parse; `description` names the text and the problem.
public struct RPCEndpointError: Error, Hashable, Sendable, CustomStringConvertible {
    public var text: String
    public var problem: String

    init(_ text: String, _ problem: String) {
        self.text = text
        self.problem = problem
    }

    public var description: String { "invalid address '\(text)': \(problem)" }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension StringProtocol {
    fileprivate func trimmingWhitespace() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
