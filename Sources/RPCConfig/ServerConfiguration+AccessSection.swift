import RPCProtocol

extension ServerConfiguration {
    /// `[Access]`: who may call what, for every service whose handler file has no `[Access]` of its own, and
    /// for the built-in `rpcd` and `rpc` services (docs/SECURITY.md).
    static let accessSection = INISection<ServerConfiguration>(
        "Access",
        keys: [
            .principals("Allow", \.access.allow),
            .principals("AllowRead", \.access.allowRead),
        ]
    )
}
