/// Who may call one service: everyone in `allow` may call every method, everyone in `allowRead` the methods
/// declared read-only (`RPCMethodDescriptor.Flags.readOnly`). One mechanism for every service, built in or
/// module: rpcd.conf's `[Access]` gives the defaults, a handler file's `[Access]` replaces them for its service.
public struct RPCAccessRule: Hashable, Sendable {
    public var allow: [RPCPrincipal]
    public var allowRead: [RPCPrincipal]

    public init(allow: [RPCPrincipal], allowRead: [RPCPrincipal]) {
        self.allow = allow
        self.allowRead = allowRead
    }

    /// What a fresh install exposes: everything to root and group `rpcd` on the Unix socket, read-only methods
    /// to every local peer, nothing to other hosts (docs/SECURITY.md).
    public static let protectedDefault = RPCAccessRule(allow: RPCPrincipal.administrators, allowRead: [.local])

    /// Every method to everyone: for tests and embedding, never the daemon's default.
    public static let unrestricted = RPCAccessRule(allow: [.anyone], allowRead: [])
}
