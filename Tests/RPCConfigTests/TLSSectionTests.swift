import RPCConfig
import RPCProtocol
import XCTest

final class TLSSectionTests: XCTestCase {
    func testDefaultsNameNoFiles() {
        XCTAssertEqual(ServerConfiguration.defaults.tls, TLSSettings())
        XCTAssertFalse(ServerConfiguration.defaults.listen.contains(where: \.isTLS))
    }

    func testEveryKeyParses() throws {
        let settings = try configuration("""
            [Server]
            Listen=tls://0.0.0.0:7391
            [TLS]
            Certificate=/etc/rpcd/tls/server.pem
            PrivateKey=/etc/rpcd/tls/server.key
            ClientCA=/etc/rpcd/tls/clients-ca.pem
            RequireClientCertificate=yes

            """)
        XCTAssertEqual(settings.listen, [.tls(host: "0.0.0.0", port: 7391)])
        XCTAssertEqual(
            settings.tls,
            TLSSettings(
                certificate: "/etc/rpcd/tls/server.pem", privateKey: "/etc/rpcd/tls/server.key",
                clientCA: "/etc/rpcd/tls/clients-ca.pem", requireClientCertificate: true))
    }

    func testRenderedSectionParsesBack() throws {
        let settings = try configuration("[TLS]\nCertificate=/a.pem\nPrivateKey=/a.key\n")
        XCTAssertEqual(try configuration(settings.rendered()), settings)
    }

    func testProblemsNameFileLineAndTheFix() {
        XCTAssertEqual(
            configError { try configuration("[TLS]\nCertificate=server.pem\n") }?.description,
            "/etc/rpcd/rpcd.conf:2: invalid value 'server.pem' for Certificate=: expected an absolute path to a PEM file, such as /etc/rpcd/tls/server.pem")
        XCTAssertEqual(
            configError { try configuration("[Server]\nListen=/run/rpcd/rpcd.sock\nListen=tls://[::]:7391\n") }?.description,
            "/etc/rpcd/rpcd.conf:3: Listen=tls://[::]:7391 needs Certificate= and PrivateKey= in [TLS]")
        XCTAssertEqual(
            configError {
                try configuration("[Server]\nListen=tls://127.0.0.1:7391\n[TLS]\nCertificate=/a.pem\nPrivateKey=/a.key\nRequireClientCertificate=yes\n")
            }?.description,
            "/etc/rpcd/rpcd.conf:6: RequireClientCertificate=yes needs ClientCA=, the CA that signs the client certificates")
    }

    func testFilesWithoutATLSListenerAreAccepted() throws {
        // A drop-in may prepare [TLS] before another adds the listener.
        XCTAssertNoThrow(try configuration("[TLS]\nCertificate=/a.pem\n"))
    }
}
