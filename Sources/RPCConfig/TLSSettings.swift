/// `[TLS]` in rpcd.conf: the files of `tls://` listeners (docs/CONFIG.md). Paths only: the files are read when
/// the daemon starts and again on every reload, by the server.
package struct TLSSettings: Hashable, Sendable {
    /// `Certificate=`: PEM, the server's certificate then any intermediates.
    package var certificate: String?
    /// `PrivateKey=`: PEM, the certificate's key.
    package var privateKey: String?
    /// `ClientCA=`: PEM, the CAs client certificates are verified against; unset asks clients for none.
    package var clientCA: String?
    /// `RequireClientCertificate=`: refuse clients without a certificate `ClientCA=` verifies, in the handshake.
    package var requireClientCertificate = false

    package init(
        certificate: String? = nil, privateKey: String? = nil, clientCA: String? = nil, requireClientCertificate: Bool = false
    ) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.clientCA = clientCA
        self.requireClientCertificate = requireClientCertificate
    }
}
