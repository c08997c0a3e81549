package import NIOSSL

/// What a client needs to connect to a TLS listener: whom to trust and, for mutual TLS, what to present.
package struct TLSClientFiles: Hashable, Sendable {
    /// PEM: the CA certificates the server's certificate must chain to; nil trusts the system's roots.
    package var caFile: String?
    /// PEM: the client's certificate (mutual TLS), with `privateKey`.
    package var certificate: String?
    package var privateKey: String?

    package init(caFile: String? = nil, certificate: String? = nil, privateKey: String? = nil) {
        self.caFile = caFile
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// A TLS 1.2+ client context that verifies the server's certificate and its name. Throws a
    /// `TLSSetupError` naming the file that cannot be used.
    package func makeContext() throws(TLSSetupError) -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        if let caFile { configuration.trustRoots = .certificates(try TLSFiles.certificates(caFile)) }
        switch (certificate, privateKey) {
        case (let certificate?, let privateKey?):
            configuration.certificateChain = try TLSFiles.certificates(certificate).map { .certificate($0) }
            configuration.privateKey = .privateKey(try TLSFiles.privateKey(privateKey))
        case (let certificate?, nil):
            throw TLSSetupError(file: certificate, reason: "a client certificate needs its private key too")
        case (nil, let privateKey?):
            throw TLSSetupError(file: privateKey, reason: "a private key needs its client certificate too")
        case (nil, nil):
            break
        }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw TLSSetupError(file: privateKey ?? certificate ?? caFile ?? "TLS", reason: "unusable: \(error)")
        }
    }
}

extension NIOSSLClientHandler {
    /// A client handler for `host`: its name for SNI and the certificate check, unless `serverName` says
    /// otherwise; an IP address is checked against the certificate's IP alternative names and sends no SNI.
    package static func forHost(_ host: String, serverName: String?, context: NIOSSLContext) throws -> NIOSSLClientHandler {
        let name = serverName ?? host
        let isAddress = name.contains(":") || name.allSatisfy { $0.isNumber || $0 == "." }
        return try NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : name)
    }
}
