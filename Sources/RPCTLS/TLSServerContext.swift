#if canImport(Glibc)
import Glibc
#endif
package import NIOSSL
import Synchronization

/// The files a TLS listener is made from: `[TLS]` in rpcd.conf (docs/CONFIG.md).
package struct TLSServerFiles: Hashable, Sendable {
    /// PEM: the server's certificate, then any intermediates.
    package var certificate: String
    /// PEM: the certificate's private key.
    package var privateKey: String
    /// PEM: the CA certificates that client certificates are verified against; nil asks for none.
    package var clientCA: String?
    /// Refuse, during the handshake, clients without a certificate `clientCA` verifies.
    package var requireClientCertificate: Bool

    package init(certificate: String, privateKey: String, clientCA: String? = nil, requireClientCertificate: Bool = false) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.clientCA = clientCA
        self.requireClientCertificate = requireClientCertificate
    }
}

/// The TLS context that new connections of TLS listeners are served with: TLS 1.2 or later, the server's
/// certificate, and client certificates verified against `ClientCA=` when one is set.
///
/// `reload` reads the files again and replaces the context for connections accepted from then on;
/// established connections keep the one they started with, so a certificate renewal drops nobody. Loading
/// fails with a `TLSSetupError` naming the file and the reason. Thread-safe.
package final class TLSServerContext: Sendable {
    private let current: Mutex<NIOSSLContext>

    package init(files: TLSServerFiles) throws(TLSSetupError) {
        current = Mutex(try Self.makeContext(files))
    }

    /// The context for the next connection.
    package var context: NIOSSLContext { current.withLock { $0 } }

    /// Reads the files again; on failure the previous context stays in use and the error says why.
    package func reload(files: TLSServerFiles) throws(TLSSetupError) {
        let context = try Self.makeContext(files)
        current.withLock { $0 = context }
    }

    static func makeContext(_ files: TLSServerFiles) throws(TLSSetupError) -> NIOSSLContext {
        let chain = try TLSFiles.certificates(files.certificate)
        let key = try TLSFiles.privateKey(files.privateKey)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        if let clientCA = files.clientCA {
            configuration.trustRoots = .certificates(try TLSFiles.certificates(clientCA))
            // Client certificates carry no host name to check: the CA's signature is what identifies them.
            configuration.certificateVerification = files.requireClientCertificate ? .noHostnameVerification : .optionalVerification
        } else if files.requireClientCertificate {
            throw TLSSetupError(file: files.certificate, reason: "RequireClientCertificate=yes needs ClientCA=, the CA that signs client certificates")
        }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw TLSSetupError(file: files.privateKey, reason: "the key does not fit the certificate, or the files are unusable (\(error))")
        }
    }
}

/// A TLS file that cannot be used; `description` names it and says why.
package struct TLSSetupError: Error, Hashable, Sendable, CustomStringConvertible {
    package var file: String
    package var reason: String

    package init(file: String, reason: String) {
        self.file = file
        self.reason = reason
    }

    package var description: String { "\(file): \(reason)" }
}

/// Reading PEM files with errors that name them.
enum TLSFiles {
    static func certificates(_ path: String) throws(TLSSetupError) -> [NIOSSLCertificate] {
        try checkReadable(path)
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw TLSSetupError(file: path, reason: "not a PEM certificate file (\(error))")
        }
        guard !certificates.isEmpty else { throw TLSSetupError(file: path, reason: "holds no certificate") }
        return certificates
    }

    static func privateKey(_ path: String) throws(TLSSetupError) -> NIOSSLPrivateKey {
        try checkReadable(path)
        try checkPrivate(path)
        do {
            return try NIOSSLPrivateKey(file: path, format: .pem)
        } catch {
            throw TLSSetupError(file: path, reason: "not a PEM private key (\(error))")
        }
    }

    /// A private key every local user can read (or write) is a key every local user may have copied: refused,
    /// as ssh refuses such a key, with the fix in the message.
    private static func checkPrivate(_ path: String) throws(TLSSetupError) {
        var status = stat()
        guard stat(path, &status) == 0 else { throw TLSSetupError(file: path, reason: String(cString: strerror(errno))) }
        let mode = status.st_mode & 0o777
        guard mode & 0o007 == 0 else {
            throw TLSSetupError(
                file: path,
                reason: "the private key is open to every user (mode \(String(mode, radix: 8))): run chmod o-rwx \(path)")
        }
    }

    private static func checkReadable(_ path: String) throws(TLSSetupError) {
        guard let file = fopen(path, "r") else {
            throw TLSSetupError(file: path, reason: String(cString: strerror(errno)))
        }
        fclose(file)
    }
}
