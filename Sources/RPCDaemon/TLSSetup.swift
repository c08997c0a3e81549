package import RPCConfig
package import RPCTLS

/// The TLS context of the `tls://` listeners, from `[TLS]` in rpcd.conf. The files are read before anything
/// else starts (and by `--check-config`): one that cannot be used is a configuration error, exit status 78,
/// which systemd does not restart in a loop.
package enum TLSSetup {
    /// nil when no listener is `tls://`. Throws `DaemonStartError` naming what is missing or the file that
    /// cannot be used and why.
    package static func serverContext(for settings: ServerConfiguration) throws -> TLSServerContext? {
        guard settings.listen.contains(where: \.isTLS) else { return nil }
        do {
            return try TLSServerContext(files: try files(of: settings.tls))
        } catch let error as TLSSetupError {
            throw DaemonStartError("[TLS] \(error)")
        }
    }

    /// The files `[TLS]` names; throws when the certificate or the key is not named.
    static func files(of tls: TLSSettings) throws -> TLSServerFiles {
        guard let certificate = tls.certificate, let privateKey = tls.privateKey else {
            throw DaemonStartError("a tls:// listener needs [TLS] Certificate= and PrivateKey= in rpcd.conf")
        }
        return TLSServerFiles(
            certificate: certificate, privateKey: privateKey, clientCA: tls.clientCA,
            requireClientCertificate: tls.requireClientCertificate)
    }
}
