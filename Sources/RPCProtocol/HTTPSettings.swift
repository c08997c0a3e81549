/// `[HTTP]` in rpcd.conf: what the `http://`, `https://` and `http+unix:` listeners let web pages do
/// (docs/CONFIG.md, docs/SECURITY.md). One value, parsed once by RPCConfig and passed to the server whole.
///
/// The defaults are the safe ones: no page of another origin may call rpcd (no CORS), and a request must name
/// the listener by an IP address, `localhost` or this machine's own name, so that a DNS name an attacker
/// points at 127.0.0.1 (DNS rebinding) gets nowhere.
package struct HTTPSettings: Hashable, Sendable {
    /// `AllowOrigins=`: the web origins (`https://dashboard.example.net`, `http://localhost:3000`), or `*` for
    /// any, whose pages may call rpcd across origins: their requests pass the `Origin` check and get CORS
    /// headers. Empty: same-origin pages only.
    package var allowOrigins: [String]
    /// `ServerNames=`: host names a request may name in `Host:` besides IP addresses, `localhost` and this
    /// machine's host name (with and without `.local`): a DNS name of the machine, a reverse proxy's name.
    package var serverNames: [String]
    /// `Console=`: whether the HTTP listeners serve the web console at `/` (RPCConsole). On by default: it
    /// shows each browser only what the access rules let that peer call (docs/SECURITY.md, "The web console").
    package var console: Bool

    package init(allowOrigins: [String] = [], serverNames: [String] = [], console: Bool = true) {
        self.allowOrigins = allowOrigins
        self.serverNames = serverNames
        self.console = console
    }

    /// The path of JSON-RPC over HTTP (`POST`) and of the WebSocket upgrade (`GET`). `POST /` is served the
    /// same, for clients configured with a base URL.
    package static let rpcPath = "/rpc"
}
