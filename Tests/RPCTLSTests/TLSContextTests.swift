import Foundation
import NIOSSL
import RPCTLS
import RPCTestSupport
import XCTest

/// RPCTLS on its own: contexts made from PEM files (a private CA made with openssl, as docs/SECURITY.md does),
/// errors that name the file, reloads that keep the old context on failure, and the names a client
/// certificate gives its holder.
final class TLSContextTests: XCTestCase {
    private var pki: TestPKI!

    override func setUpWithError() throws {
        pki = try TestPKI.inTemporaryDirectory()
    }

    override func tearDown() {
        pki.removeDirectory()
    }

    /// The `TLSSetupError` that `body` throws; nil when it throws nothing (or another error).
    private func setupError(_ body: () throws -> Void) -> TLSSetupError? {
        do {
            try body()
            return nil
        } catch {
            return error as? TLSSetupError
        }
    }

    func testAServerContextFromACertificateAndItsKey() throws {
        let server = try pki.issueServer()
        XCTAssertNoThrow(try TLSServerContext(files: TLSServerFiles(certificate: server.certificate, privateKey: server.key)))
        XCTAssertNoThrow(try TLSServerContext(files: TLSServerFiles(
            certificate: server.certificate, privateKey: server.key, clientCA: pki.caFile, requireClientCertificate: true)))
    }

    func testErrorsNameTheFileAndSayWhy() throws {
        let server = try pki.issueServer()
        let other = try pki.issueClient("other")
        let missing = pki.path("missing.pem")

        let noFile = setupError { _ = try TLSServerContext(files: TLSServerFiles(certificate: missing, privateKey: server.key)) }
        XCTAssertEqual(noFile?.file, missing)
        XCTAssertEqual(noFile?.reason, "No such file or directory")

        let notPEM = pki.path("server.ext")  // a text file that is no certificate
        XCTAssertEqual(setupError { _ = try TLSServerContext(files: TLSServerFiles(certificate: notPEM, privateKey: server.key)) }?.file, notPEM)

        let wrongKey = setupError { _ = try TLSServerContext(files: TLSServerFiles(certificate: server.certificate, privateKey: other.key)) }
        XCTAssertEqual(wrongKey?.file, other.key, "the key that does not fit the certificate")

        let noCA = setupError {
            _ = try TLSServerContext(files: TLSServerFiles(certificate: server.certificate, privateKey: server.key, requireClientCertificate: true))
        }
        XCTAssertEqual(noCA?.file, server.certificate)
        XCTAssertEqual(noCA?.description.contains("needs ClientCA="), true, noCA?.description ?? "")
    }

    func testAFailedReloadKeepsTheContextAndASuccessfulOneReplacesIt() throws {
        let server = try pki.issueServer()
        let files = TLSServerFiles(certificate: server.certificate, privateKey: server.key)
        let context = try TLSServerContext(files: files)
        let first = context.context

        var broken = files
        broken.privateKey = pki.path("missing.key")
        XCTAssertEqual(setupError { try context.reload(files: broken) }?.file, broken.privateKey)
        XCTAssertTrue(context.context === first, "connections accepted after a failed reload keep the old context")

        try context.reload(files: files)
        XCTAssertFalse(context.context === first, "a reload reads the files again")
    }

    func testAClientCertificateNeedsItsKeyAndTheOtherWayRound() throws {
        let client = try pki.issueClient("ops")
        XCTAssertNoThrow(try TLSClientFiles(caFile: pki.caFile, certificate: client.certificate, privateKey: client.key).makeContext())
        XCTAssertNoThrow(try TLSClientFiles(caFile: pki.caFile).makeContext())
        XCTAssertEqual(setupError { _ = try TLSClientFiles(certificate: client.certificate).makeContext() }?.file, client.certificate)
        XCTAssertEqual(setupError { _ = try TLSClientFiles(privateKey: client.key).makeContext() }?.file, client.key)
        let missing = pki.path("missing-ca.pem")
        XCTAssertEqual(setupError { _ = try TLSClientFiles(caFile: missing).makeContext() }?.file, missing)
    }

    func testIdentitiesAreTheCommonNameThenAlternativeNamesByKind() throws {
        let issued = try pki.issue(
            "ops", commonName: "ops", alternativeNames: "DNS:ops,DNS:ops.example.org,email:ops@example.org,URI:spiffe://example.org/ops,IP:127.0.0.1",
            usage: "clientAuth")
        let certificate = try XCTUnwrap(try NIOSSLCertificate.fromPEMFile(issued.certificate).first)
        XCTAssertEqual(
            TLSPeerIdentity.identities(of: certificate),
            ["ops", "dns:ops", "dns:ops.example.org", "email:ops@example.org", "uri:spiffe://example.org/ops"],
            "the subject's common name bare, alternative names by kind (client:dns:NAME ...); an IP address names no client")
    }
}
