import NIOCore
import NIOHTTP1
package import RPCServer

/// The web console (README's tour, docs/SECURITY.md): the files of console/, embedded in rpcd, served at
/// `/`, `/console.js`, ... of every HTTP listener unless `[HTTP] Console=no`. The page itself holds nothing
/// of the daemon's: what it shows it asks for with calls (`rpc.discover`, `rpcd.info`, the methods the user
/// calls, `rpc.subscribe` over the WebSocket), each judged by the access rules like any client's. The files
/// are served to the peers that may call `rpc.discover`, which the console cannot work without.
///
/// Every answer carries a strict Content-Security-Policy (scripts and styles from the listener only, no
/// inline script, connections to the listener and its WebSocket only, no framing), `nosniff`, `no-referrer`,
/// and an ETag with `Cache-Control: no-cache`: browsers revalidate each time and get 304 until rpcd is upgraded.
package enum WebConsole {
    /// The access rule that decides who may load the console: that of `rpc.discover`.
    package static let accessMethod = "rpc.discover"

    /// One resource per embedded file.
    package static func resources() -> [HTTPResource] {
        ConsoleAsset.embedded.map { asset in
            HTTPResource(path: asset.path, method: accessMethod) { request in
                request.eventLoop.makeSucceededFuture(response(for: asset, requestHeaders: request.headers))
            }
        }
    }

    /// The answer to a `GET` of `asset`: 304 when `If-None-Match` names its ETag, else the file.
    static func response(for asset: ConsoleAsset, requestHeaders: HTTPHeaders) -> HTTPResource.Response {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: asset.contentType)
        headers.add(name: "etag", value: asset.etag)
        headers.add(name: "cache-control", value: "no-cache")
        headers.add(name: "content-security-policy", value: contentSecurityPolicy(host: requestHeaders.first(name: "host")))
        headers.add(name: "x-content-type-options", value: "nosniff")
        headers.add(name: "referrer-policy", value: "no-referrer")
        headers.add(name: "x-frame-options", value: "DENY")
        headers.add(name: "cross-origin-resource-policy", value: "same-origin")
        headers.add(name: "cross-origin-opener-policy", value: "same-origin")
        let validators = requestHeaders[canonicalForm: "if-none-match"]
        if validators.contains(where: { $0 == "*" || $0 == asset.etag || $0 == "W/" + asset.etag }) {
            return HTTPResource.Response(status: .notModified, headers: headers, body: ByteBuffer())
        }
        return HTTPResource.Response(status: .ok, headers: headers, body: asset.body)
    }

    /// The policy of every console answer. `connect-src` names the listener's WebSocket URLs besides `'self'`
    /// (which CSP 3 browsers already stretch to ws: and wss: of the same host, older ones do not); `host` is
    /// the request's `Host:`, which `HTTPRequestPolicy` has checked names this server, and is left out unless
    /// it is plainly `host[:port]`, so nothing a client sends can add a directive.
    static func contentSecurityPolicy(host: String?) -> String {
        var connect = "'self'"
        if let host, !host.isEmpty, host.utf8.allSatisfy(isAuthorityByte) {
            connect += " ws://\(host) wss://\(host)"
        }
        return [
            "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src \(connect)",
            "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
        ].joined(separator: "; ")
    }

    private static func isAuthorityByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
            true
        default:
            false
        }
    }
}
