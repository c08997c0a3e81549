/// Where rpcd listens or where a client connects: a TCP host and port, the same with TLS, or a Unix-domain
/// socket, each carrying either rpcd's length-prefixed frames or HTTP (JSON-RPC over POST and WebSocket,
/// docs/PROTOCOL.md §9).
///
/// The textual forms are the ones `Listen=` in rpcd.conf, `rpcd --listen` and `rpcctl --address` accept:
///
///     127.0.0.1:7390            IPv4 address and port
///     [::1]:7390                IPv6 address (in brackets) and port
///     localhost:7390            a host name and port (resolved when connecting or binding)
///     tls://0.0.0.0:7391        any of the TCP forms after tls://: the same frames inside TLS 1.2 or later
///     /run/rpcd/rpcd.sock       an absolute path: a Unix-domain stream socket
///     http://127.0.0.1:7380     any of the TCP forms after http://: HTTP/1.1 (POST /rpc, WebSocket at /rpc)
///     https://[::]:7381         the same inside TLS ([TLS] section, client certificates as on tls://)
///     http+unix:/run/rpcd/http.sock   HTTP on a Unix-domain socket (`curl --unix-socket`)
///
/// Parsing is pure: it checks form and range, never resolves names or touches the file system.
public enum RPCEndpoint: Hashable, Sendable {
    case tcp(host: String, port: Int)
    case tls(host: String, port: Int)
    case unix(path: String)
    case http(host: String, port: Int)
    case https(host: String, port: Int)
    case httpUnix(path: String)

    /// The prefix that makes a TCP address a TLS one.
    public static let tlsScheme = "tls://"
    /// The prefixes of the HTTP forms.
    public static let httpScheme = "http://"
    public static let httpsScheme = "https://"
    public static let httpUnixScheme = "http+unix:"

    /// The TCP port rpcd uses when none is configured (see docs/CONFIG.md).
    public static let defaultPort = 7390

    /// The Unix socket the packaged daemon listens on and `rpcctl` tries first.
    public static let defaultSocketPath = "/run/rpcd/rpcd.sock"

    /// Parses one of the forms above; the error says what is wrong and what would be right.
    public init(parsing text: String) throws(RPCEndpointError) {
        let text = text.trimmingWhitespace()
        guard !text.isEmpty else { throw RPCEndpointError(text, "an address is empty") }
        for (scheme, make, example) in [
            (Self.tlsScheme, RPCEndpoint.tls, "tls://0.0.0.0:7391"), (Self.httpScheme, RPCEndpoint.http, "http://127.0.0.1:7380"),
            (Self.httpsScheme, RPCEndpoint.https, "https://0.0.0.0:7381"),
        ] where text.hasPrefix(scheme) {
            var inner = String(text.dropFirst(scheme.count))
            if scheme != Self.tlsScheme, inner.hasSuffix("/") { inner.removeLast() }  // http://host:port/ as browsers write it
            guard case .tcp(let host, let port) = try? RPCEndpoint(parsing: inner) else {
                throw RPCEndpointError(text, "expected \(scheme)HOST:PORT or \(scheme)[IPV6]:PORT, as in \(example)")
            }
            self = make(host, port)
            return
        }
        if text.hasPrefix(Self.httpUnixScheme) {
            guard case .unix(let path) = try? RPCEndpoint(parsing: String(text.dropFirst(Self.httpUnixScheme.count))) else {
                throw RPCEndpointError(text, "expected http+unix:/ABSOLUTE/PATH (shorter than 108 bytes), as in http+unix:/run/rpcd/http.sock")
            }
            self = .httpUnix(path: path)
            return
        }
        if !text.hasPrefix("/"), let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") {
            throw RPCEndpointError(text, "unknown scheme '\(text[..<colon])://'; tls://, http://, https:// and http+unix: are known")
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
                    text, "expected HOST:PORT, [IPV6]:PORT or an absolute socket path (tls://, http:// or https:// before either TCP form, or http+unix:/PATH), as in 127.0.0.1:\(Self.defaultPort)")
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

    /// Host and port of a TCP endpoint, with or without TLS or HTTP; nil for a Unix socket.
    public var tcpAddress: (host: String, port: Int)? {
        switch self {
        case .tcp(let host, let port), .tls(let host, let port), .http(let host, let port), .https(let host, let port):
            return (host, port)
        case .unix, .httpUnix: return nil
        }
    }

    /// The path of a Unix-socket endpoint (framed or HTTP); nil for TCP.
    public var unixPath: String? {
        switch self {
        case .unix(let path), .httpUnix(let path): return path
        default: return nil
        }
    }

    /// Whether connections to this endpoint use TLS (`tls://` and `https://`).
    public var isTLS: Bool {
        switch self {
        case .tls, .https: return true
        default: return false
        }
    }

    /// Whether this endpoint speaks HTTP (and WebSocket) rather than rpcd's length-prefixed frames.
    public var isHTTP: Bool {
        switch self {
        case .http, .https, .httpUnix: return true
        default: return false
        }
    }

    /// The same endpoint with another port (an ephemeral port resolved, say); a Unix socket is returned as is.
    public func withPort(_ port: Int) -> RPCEndpoint {
        switch self {
        case .tcp(let host, _): return .tcp(host: host, port: port)
        case .tls(let host, _): return .tls(host: host, port: port)
        case .http(let host, _): return .http(host: host, port: port)
        case .https(let host, _): return .https(host: host, port: port)
        case .unix, .httpUnix: return self
        }
    }
}

extension RPCEndpoint: CustomStringConvertible {
    /// The same text `init(parsing:)` accepts.
    public var description: String {
        switch self {
        case .tcp(let host, let port) where host.contains(":"): return "[\(host)]:\(port)"
        case .tcp(let host, let port): return "\(host):\(port)"
        case .tls(let host, let port): return Self.tlsScheme + RPCEndpoint.tcp(host: host, port: port).description
        case .http(let host, let port): return Self.httpScheme + RPCEndpoint.tcp(host: host, port: port).description
        case .https(let host, let port): return Self.httpsScheme + RPCEndpoint.tcp(host: host, port: port).description
        case .unix(let path): return path
        case .httpUnix(let path): return Self.httpUnixScheme + path
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
