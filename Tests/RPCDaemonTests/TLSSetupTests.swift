import RPCConfig
@testable import RPCDaemon
import RPCProtocol
import XCTest

/// `[TLS]` is read before anything starts: without a `tls://` listener it is not needed, and a missing file name
/// is a start-up error that names the key to set.
final class TLSSetupTests: XCTestCase {
    func testNoTLSListenerNeedsNoContext() throws {
        var settings = ServerConfiguration.defaults
        settings.listen = [try RPCEndpoint(parsing: "0.0.0.0:5000"), try RPCEndpoint(parsing: "http://0.0.0.0:8080")]
        settings.tls.certificate = nil
        XCTAssertNil(try TLSSetup.serverContext(for: settings))
    }

    func testATLSListenerWithoutCertificateOrKeyNamesBoth() throws {
        var settings = ServerConfiguration.defaults
        settings.listen = [try RPCEndpoint(parsing: "tls://0.0.0.0:5443")]
        settings.tls.certificate = "/etc/rpcd/cert.pem"
        settings.tls.privateKey = nil
        XCTAssertThrowsError(try TLSSetup.serverContext(for: settings)) { error in
            XCTAssert(error is DaemonStartError, "\(error)")
            XCTAssert("\(error)".contains("[TLS] Certificate= and PrivateKey="), "\(error)")
        }
        settings.tls.privateKey = "/etc/rpcd/key.pem"
        settings.tls.clientCA = "/etc/rpcd/ca.pem"
        let files = try TLSSetup.files(of: settings.tls)
        XCTAssertEqual(files.certificate, "/etc/rpcd/cert.pem")
        XCTAssertEqual(files.privateKey, "/etc/rpcd/key.pem")
        XCTAssertEqual(files.clientCA, "/etc/rpcd/ca.pem")
    }
}
