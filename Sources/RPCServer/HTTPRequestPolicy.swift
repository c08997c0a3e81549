#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import RPCProtocol

/// The checks that keep web pages from using rpcd behind their visitors' backs (docs/SECURITY.md, "HTTP
/// listeners"), made on every request head before anything else, the WebSocket upgrade included. Pure and
/// immutable: one per server, shared by its connections.
///
/// - **DNS rebinding**: `Host:` must name the listener by an IP address, `localhost`, this machine's host name
///   (with or without `.local`) or a name in `ServerNames=`. A page of `attacker.example` whose name was made
///   to resolve to 127.0.0.1 sends `Host: attacker.example` and is refused, although its requests are
///   same-origin to the browser.
/// - **Cross-site requests**: a request with `Origin:` must come from the listener's own origin (the
///   `Origin`'s authority equals `Host:`) or from one in `AllowOrigins=`. Browsers send `Origin` on every
///   `POST` and WebSocket handshake, so another site's page can neither post nor open a socket.
/// - **Simple requests**: a `POST` must say `Content-Type: application/json` (or `application/json-rpc`):
///   an HTML form can send only `text/plain`, `multipart/form-data` and `application/x-www-form-urlencoded`,
///   so no form can post a call, and a script must ask first (a CORS preflight), which is refused unless its
///   origin is allowed.
struct HTTPRequestPolicy: Sendable {
    let settings: HTTPSettings
    /// This machine's host name and its `.local` form, lower case.
    let machineNames: [String]

    init(settings: HTTPSettings, machineNames: [String] = Self.localMachineNames()) {
        self.settings = settings
        self.machineNames = machineNames
    }

    /// Why a request is refused: its status, and a sentence for the client and the log.
    struct Refusal: Error, Equatable {
        var status: HTTPResponseStatus
        var reason: String
    }

    /// The `Host:` and `Origin:` checks; nil when the request may proceed. `allowedOrigin` (when non-nil) is
    /// the cross-origin `Origin` that `AllowOrigins=` lets in, to be named in the CORS headers of the answer.
    func check(_ head: HTTPRequestHead) -> (refusal: Refusal?, allowedOrigin: String?) {
        check(HTTPRequestFields(head.headers), acceptedHost: nil)
    }

    /// The same checks on the fields of a request whose connection already had `acceptedHost` accepted as
    /// its `Host:`: a keep-alive connection sends the same one every time, and it is checked once.
    func check(_ fields: HTTPRequestFields, acceptedHost: String?) -> (refusal: Refusal?, allowedOrigin: String?) {
        guard fields.hostCount == 1, let host = fields.host else {
            return (Refusal(status: .badRequest, reason: "a request needs exactly one Host: header"), nil)
        }
        if host != acceptedHost, let refusal = checkHost(host) { return (refusal, nil) }
        guard let origin = fields.origin else { return (nil, nil) }
        let scheme = origin.prefix { $0 != ":" }
        let authority = origin.dropFirst(scheme.count).hasPrefix("://") ? origin.dropFirst(scheme.count + 3) : nil
        if let authority, authority.lowercased() == host.lowercased() {
            // Same origin (scheme aside: a page served by this listener has its scheme).
            return (nil, nil)
        }
        if settings.allowOrigins.contains("*") || settings.allowOrigins.contains(origin.lowercased()) {
            return (nil, origin)
        }
        return (Refusal(
            status: .forbidden,
            reason: "a page of \(origin) may not call this server (only its own origin and [HTTP] AllowOrigins=)"), nil)
    }

    /// Whether `host` (a `Host:` value) names this server; the refusal if not.
    func checkHost(_ host: String) -> Refusal? {
        guard let hostName = Self.hostName(ofAuthority: host) else {
            return Refusal(status: .badRequest, reason: "a request needs exactly one Host: header")
        }
        guard isOwnName(hostName) else {
            return Refusal(
                status: .misdirectedRequest,
                reason: "Host: \(host) is not a name of this server (an IP address, localhost, its host name, or [HTTP] ServerNames=)")
        }
        return nil
    }

    /// Whether a `POST`'s `Content-Type` is JSON: `application/json` or `application/json-rpc`, with any
    /// parameters (`; charset=utf-8`).
    static func isJSON(contentType: String?) -> Bool {
        guard let contentType else { return false }
        if contentType == "application/json" { return true }  // what nearly every client sends
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
            $0.trimmingCharacters(in: " \t").lowercased()
        }
        return mediaType == "application/json" || mediaType == "application/json-rpc"
    }

    /// The headers that let an allowed cross-origin page read the answer.
    static func corsHeaders(origin: String, into headers: inout HTTPHeaders) {
        headers.add(name: "access-control-allow-origin", value: origin)
        headers.add(name: "vary", value: "Origin")
    }

    /// The answer to a CORS preflight (`OPTIONS`) from an allowed origin.
    static func preflightHeaders(origin: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        corsHeaders(origin: origin, into: &headers)
        headers.add(name: "access-control-allow-methods", value: "POST, GET")
        headers.add(name: "access-control-allow-headers", value: "Content-Type")
        headers.add(name: "access-control-max-age", value: "600")
        return headers
    }

    private func isOwnName(_ name: String) -> Bool {
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        if Self.isIPAddress(name) { return true }
        return machineNames.contains(name) || settings.serverNames.contains(name)
    }

    /// The host of `Host:`'s `host[:port]` or `[v6]:port`, lower case, without a trailing dot; nil if malformed.
    static func hostName(ofAuthority authority: String) -> String? {
        var text = Substring(authority.lowercased())
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        if let colon = text.lastIndex(of: ":") { text = text[..<colon] }
        if text.hasSuffix(".") { text = text.dropLast() }
        return text.isEmpty ? nil : String(text)
    }

    private static func isIPAddress(_ text: String) -> Bool {
        (try? SocketAddress(ipAddress: text, port: 0)) != nil
    }

    /// `gethostname()` and its `.local` form (the name Avahi advertises), lower case.
    static func localMachineNames() -> [String] {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return [] }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
        guard !name.isEmpty else { return [] }
        return name.hasSuffix(".local") ? [name] : [name, name + ".local"]
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(drop(while: { set.contains($0) }).reversed().drop(while: { set.contains($0) }).reversed())
    }
}
