import RPCProtocol

extension ServerConfiguration {
    /// `[TLS]`: the certificate, key and client CA of `tls://` listeners. The order here is the order
    /// `rendered()` writes the keys in.
    static let tlsSection = INISection<ServerConfiguration>(
        "TLS",
        keys: [
            .value("Certificate", \.tls.certificate, parse: parseAbsolutePath, format: { $0 ?? "" }),
            .value("PrivateKey", \.tls.privateKey, parse: parseAbsolutePath, format: { $0 ?? "" }),
            .value("ClientCA", \.tls.clientCA, parse: parseAbsolutePath, format: { $0 ?? "" }),
            .boolean("RequireClientCertificate", \.tls.requireClientCertificate),
        ]
    )

    /// `[TLS]` settings that cannot work together with the listeners, reported at the line that asks for them:
    /// a `tls://` listener without a certificate and key, a client certificate required with no CA to check it.
    func checkTLS(_ documents: [INIDocument]) throws(ConfigError) {
        let entries = documents.flatMap(\.entries)
        if let listener = listen.first(where: \.isTLS), tls.certificate == nil || tls.privateKey == nil {
            let line = entries.last {
                $0.section == "Server" && $0.key == "Listen" && ($0.value.hasPrefix(RPCEndpoint.tlsScheme) || $0.value.hasPrefix(RPCEndpoint.httpsScheme))
            }
            throw ConfigError(
                file: line?.file ?? Self.defaultPath, line: line?.line,
                message: "Listen=\(listener) needs Certificate= and PrivateKey= in [TLS]")
        }
        if tls.requireClientCertificate, tls.clientCA == nil,
            let line = entries.last(where: { $0.section == "TLS" && $0.key == "RequireClientCertificate" })
        {
            throw line.error("RequireClientCertificate=yes needs ClientCA=, the CA that signs the client certificates")
        }
    }

    /// An absolute path: the daemon's working directory is `/` under systemd, so a relative one would surprise.
    @Sendable private static func parseAbsolutePath(_ entry: INIEntry) throws(ConfigError) -> String? {
        guard entry.value.hasPrefix("/") else {
            throw entry.invalidValue(expected: "expected an absolute path to a PEM file, such as /etc/rpcd/tls/server.pem")
        }
        return entry.value
    }
}
