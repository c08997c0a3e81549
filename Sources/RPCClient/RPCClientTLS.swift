import RPCTLS

/// How a client connects to a `tls://` endpoint: the CA that signed the server's certificate, the client's own
/// certificate for mutual TLS, and the name the server's certificate must carry. All files are PEM.
public struct RPCClientTLS: Hashable, Sendable {
    /// The CA certificates the server's certificate must chain to; nil: the system's trusted CAs.
    public var caFile: String?
    /// The client's certificate and private key, when the server asks for one (`client:NAME` rules).
    public var certificateFile: String?
    public var privateKeyFile: String?
    /// The name checked against the server's certificate (and sent as SNI); nil: the endpoint's host. An IP
    /// address is checked against the certificate's IP alternative names.
    public var serverName: String?

    public init(caFile: String? = nil, certificateFile: String? = nil, privateKeyFile: String? = nil, serverName: String? = nil) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.serverName = serverName
    }

    var files: TLSClientFiles {
        TLSClientFiles(caFile: caFile, certificate: certificateFile, privateKey: privateKeyFile)
    }
}
