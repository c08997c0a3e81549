import Foundation
import RPCClient
import RPCJSON
import RPCProtocol
import RPCTestSupport
import XCTest

/// `tls://` listeners of the real daemon, with a CA made for the test (issue 8): the CA file a client trusts,
/// client certificates required and matched by `client:NAME` rules, and certificates re-read on reload without
/// dropping the connections that are open.
final class TLSTests: XCTestCase {
    private var pki: TestPKI!

    override func setUpWithError() throws {
        pki = try TestPKI.inTemporaryDirectory()
    }

    override func tearDown() {
        pki.removeDirectory()
    }

    /// rpcd with a TLS listener on an ephemeral port (`server` lines, then `tls` ones in [TLS]), with a server
    /// certificate for `certificateNames` from the test's CA.
    private func withTLS(
        server settings: String = "", tls: String, access: String? = nil, modules: [String] = [],
        certificateNames: String = "DNS:localhost,IP:127.0.0.1"
    ) throws -> DaemonOptions {
        let server = try pki.issue("server", commonName: "localhost", alternativeNames: certificateNames, usage: "serverAuth")
        let config = "Listen=tls://127.0.0.1:0\n" + settings + "[TLS]\nCertificate=\(server.certificate)\nPrivateKey=\(server.key)\n" + tls
        return DaemonOptions(config: config, access: access, modules: modules)
    }

    /// The address of the TLS listener as rpcd logged it.
    private static let tlsListener = #"tls://127\.0\.0\.1:\d+"#

    private func call(
        _ endpoint: RPCEndpoint, _ tls: RPCClientTLS, _ method: String, _ params: JSONValue? = nil
    ) async throws -> JSONValue {
        let client = try await RPCClient.connect(to: endpoint, tls: tls, timeout: .seconds(10))
        defer { Task { await client.close() } }
        return try await client.call(method, params: params, timeout: .seconds(10))
    }

    /// The server's certificate must chain to the CA the client trusts and carry the name the client expects.
    func testTheClientChecksTheServersCertificateAndName() async throws {
        // Only a DNS name: swift-nio-ssl accepts a certificate naming the connected address whatever name is
        // asked for, so an IP alternative name would hide a missing name check.
        let daemon = try DaemonProcess(withTLS(tls: "", certificateNames: "DNS:localhost"))
        let endpoint = try daemon.listener(Self.tlsListener)
        defer { withExtendedLifetime(daemon) {} }
        let pong = try await call(endpoint, RPCClientTLS(caFile: pki.caFile, serverName: "localhost"), "rpcd.ping")
        XCTAssertEqual(pong, "pong")
        for (what, tls, reason) in [
            ("a certificate from a CA the system does not know", RPCClientTLS(serverName: "localhost"), "not signed by a trusted CA"),
            ("a certificate for another name", RPCClientTLS(caFile: pki.caFile, serverName: "rpcd.example.org"), "does not carry the name"),
            ("a certificate that does not name the address", RPCClientTLS(caFile: pki.caFile), "does not carry the name"),
        ] {
            do {
                _ = try await call(endpoint, tls, "rpcd.ping")
                XCTFail("\(what) was accepted")
            } catch RPCClientError.connectFailed(_, let message) {
                XCTAssertTrue(message.contains(reason), "\(what): \(message)")
            }
        }
    }

    func testRequiredClientCertificatesAndClientRules() async throws {
        let alice = try pki.issueClient("alice")
        let bob = try pki.issueClient("bob")
        let rogue = try TestPKI(in: pki.directory, name: "rogue")
        let mallory = try rogue.issueClient("mallory")
        let daemon = try DaemonProcess(withTLS(
            server: "LogLevel=debug\n", tls: "ClientCA=\(pki.caFile)\nRequireClientCertificate=yes\n",
            access: "Allow=client:alice\nAllowRead=client:*\n", modules: ["kv"]))
        let endpoint = try daemon.listener(Self.tlsListener)
        let asAlice = RPCClientTLS(caFile: pki.caFile, certificateFile: alice.certificate, privateKeyFile: alice.key)
        let asBob = RPCClientTLS(caFile: pki.caFile, certificateFile: bob.certificate, privateKeyFile: bob.key)
        let stored = try await call(endpoint, asAlice, "kv.set", ["key": "k", "value": 1])
        XCTAssertEqual(stored, true)
        let read = try await call(endpoint, asBob, "kv.get", ["k"])
        XCTAssertEqual(read, 1, "client:* may read")
        do {
            _ = try await call(endpoint, asBob, "kv.set", ["key": "k", "value": 2])
            XCTFail("bob may not write")
        } catch RPCClientError.remote(let error) {
            XCTAssertEqual(error.code, -32007)
        }
        for (who, tls, reason) in [
            ("no certificate", RPCClientTLS(caFile: pki.caFile), "the server requires a client certificate (--cert and --key)"),
            ("another CA's certificate",
             RPCClientTLS(caFile: pki.caFile, certificateFile: mallory.certificate, privateKeyFile: mallory.key),
             "the server did not accept this client's certificate (is it signed by the server's ClientCA=?)"),
        ] {
            do {
                _ = try await call(endpoint, tls, "rpcd.ping")
                XCTFail("\(who) was let in")
            } catch let error as RPCClientError {
                // TLS 1.3 refuses a client certificate after the client's side of the handshake: at the first call.
                // The server's close can overtake its alert (the request it did not read turns the close into a
                // reset, which discards what the client had not read yet): then the connection just closed.
                XCTAssertTrue([.tlsFailed(reason), .connectionClosed].contains(error), "\(who): \(error)")
            }
        }
        _ = try daemon.waitForLog(matching: "rpcd_tls_client=(alice,email:alice@example.org)")
        _ = try daemon.waitForLog(matching: "(TLS handshake failed; connection closed) rpcd_error=")
    }

    /// A peer that speaks plain frames to a TLS listener, or says nothing, is closed: at once, or when
    /// `FrameTimeout=` has passed without a handshake. Both are logged; the daemon serves on.
    func testClientsWithoutAHandshakeAreClosed() async throws {
        let daemon = try DaemonProcess(withTLS(server: "FrameTimeout=1s\n", tls: ""))
        let endpoint = try daemon.listener(Self.tlsListener)
        let plain = try RawConnection(endpoint)
        try plain.sendFrame(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#)
        XCTAssertTrue(plain.isClosedByPeerAfterAnyReply(), "a plain frame is not a TLS handshake")
        let silent = try RawConnection(endpoint, receiveTimeout: 5)
        let start = ContinuousClock.now
        XCTAssertTrue(silent.isClosedByPeer(), "a silent client is closed")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(4))
        _ = try daemon.waitForLog(matching: "(no TLS handshake within 1 s)")
        let pong = try await call(endpoint, RPCClientTLS(caFile: pki.caFile), "rpcd.ping")
        XCTAssertEqual(pong, "pong")
    }

    /// A plain client at a TLS listener, and a TLS client at a plain one, are told what happened.
    func testMixingUpPlainAndTLSSaysSo() async throws {
        let daemon = try DaemonProcess(withTLS(server: "Listen=127.0.0.1:0\n", tls: ""))
        let tlsEndpoint = try daemon.listener(Self.tlsListener)
        let port = try XCTUnwrap(Int(try daemon.waitForLog(matching: #"rpcd_listener=127\.0\.0\.1:(\d+)"#)))
        do {
            _ = try await call(.tls(host: "127.0.0.1", port: port), RPCClientTLS(caFile: pki.caFile), "rpcd.ping")
            XCTFail("a plain listener completed a TLS handshake")
        } catch RPCClientError.connectFailed(_, let reason) {
            XCTAssertTrue(reason.contains("the server did not answer in TLS"), reason)
        }
        _ = try daemon.waitForLog(matching: "(Refused a TLS handshake on a plain listener)")
        let address = try XCTUnwrap(tlsEndpoint.tcpAddress)
        let plain = try await RPCClient.connect(to: .tcp(host: address.host, port: address.port))
        do {
            _ = try await plain.call("rpcd.ping", timeout: .seconds(10))
            XCTFail("a TLS listener answered a plain frame")
        } catch {
            XCTAssertEqual(error, .protocolViolation("the server answered in TLS: connect with a tls:// address or --tls"))
        }
        await plain.close()
    }

    /// `client:NAME` is the subject's common name only; alternative names match with their kind
    /// (`client:dns:NAME`), so a DNS name does not pass for a common name (issue 21).
    func testClientNamesMatchOnlyInTheFormTheyWereIssuedIn() async throws {
        let carol = try pki.issue("carol", commonName: "carol", alternativeNames: "DNS:ops.example.org", usage: "clientAuth")
        let dave = try pki.issue("dave", commonName: "dns:ops.example.org", alternativeNames: "DNS:dave.example.org", usage: "clientAuth")
        let daemon = try DaemonProcess(withTLS(
            tls: "ClientCA=\(pki.caFile)\nRequireClientCertificate=yes\n",
            access: "Allow=client:dns:ops.example.org\nAllowRead=client:ops.example.org\n", modules: ["kv"]))
        let endpoint = try daemon.listener(Self.tlsListener)
        defer { _ = daemon }
        let asCarol = RPCClientTLS(caFile: pki.caFile, certificateFile: carol.certificate, privateKeyFile: carol.key)
        let asDave = RPCClientTLS(caFile: pki.caFile, certificateFile: dave.certificate, privateKeyFile: dave.key)
        let stored = try await call(endpoint, asCarol, "kv.set", ["key": "k", "value": 1])
        XCTAssertEqual(stored, true, "client:dns: matches carol's DNS name")
        do {
            _ = try await call(endpoint, asDave, "kv.get", ["k"])
            XCTFail("a common name that reads like a DNS name named somebody")
        } catch RPCClientError.remote(let error) {
            XCTAssertEqual(error.code, -32007)
        }
    }

    /// A private key every local user can read is refused (issue 21), on reload as at start: the old one
    /// keeps serving, and the log says why and how to fix it.
    func testAPrivateKeyOpenToEveryUserIsRefused() async throws {
        let daemon = try DaemonProcess(withTLS(tls: ""))
        let endpoint = try daemon.listener(Self.tlsListener)
        XCTAssertEqual(chmod(pki.path("server.key"), 0o644), 0)
        kill(daemon.process.processIdentifier, SIGHUP)
        let reason = try daemon.waitForLog(matching: "(open to every user \\(mode 644\\): run chmod o-rwx)")
        XCTAssertFalse(reason.isEmpty)
        let still = try await call(endpoint, RPCClientTLS(caFile: pki.caFile), "rpcd.ping")
        XCTAssertEqual(still, "pong", "the key read before keeps serving")
    }

    func testReloadReadsNewFilesAndKeepsOpenConnections() async throws {
        let daemon = try DaemonProcess(withTLS(tls: ""))
        let endpoint = try daemon.listener(Self.tlsListener)
        let open = try await RPCClient.connect(to: endpoint, tls: RPCClientTLS(caFile: pki.caFile))
        let before = try await open.call("rpcd.ping")
        XCTAssertEqual(before, "pong")

        // The same file names, now holding a certificate from another CA.
        let renewed = try TestPKI(in: pki.directory, name: "renewed")
        let next = try renewed.issueServer("next")
        let server = (pki.path("server.pem"), pki.path("server.key"))
        try FileManager.default.removeItem(atPath: server.0)
        try FileManager.default.removeItem(atPath: server.1)
        try FileManager.default.copyItem(atPath: next.certificate, toPath: server.0)
        try FileManager.default.copyItem(atPath: next.key, toPath: server.1)
        kill(daemon.process.processIdentifier, SIGHUP)
        _ = try daemon.waitForLog(matching: "(TLS files read again)")

        let stillOpen = try await open.call("rpcd.ping")
        XCTAssertEqual(stillOpen, "pong", "the open connection keeps its session")
        await open.close()
        let fresh = try await call(endpoint, RPCClientTLS(caFile: renewed.caFile), "rpcd.ping")
        XCTAssertEqual(fresh, "pong", "new connections get the new certificate")
        do {
            _ = try await call(endpoint, RPCClientTLS(caFile: pki.caFile), "rpcd.ping")
            XCTFail("the old certificate is still served")
        } catch {}
    }

    /// A client that keeps its session resumes it (TLS 1.3 tickets, and TLS 1.2 too): BoringSSL's server issues
    /// and accepts them, and rpcd counts the handshakes that resumed (`rpcd.info` `tls`). swift-nio-ssl's
    /// client cannot offer a session, so the client here is Python's `ssl` (OpenSSL), a real second process.
    func testASecondConnectionResumesTheSessionAndIsCounted() async throws {
        let daemon = try DaemonProcess(withTLS(tls: ""))
        let endpoint = try daemon.listener(Self.tlsListener)
        defer { withExtendedLifetime(daemon) {} }
        guard case .tls(_, let port) = endpoint else { return XCTFail("not a TLS endpoint") }
        let script = """
            import json, socket, ssl, sys
            def connect(context, session):
                s = context.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))),
                                        server_hostname="localhost", session=session)
                request = json.dumps({"jsonrpc": "2.0", "method": "rpcd.info", "id": 1}).encode()
                s.sendall(len(request).to_bytes(4, "big") + request)
                reply = b""
                while len(reply) < 4 or len(reply) < 4 + int.from_bytes(reply[:4], "big"):
                    reply += s.recv(65536)
                info = json.loads(reply[4:])["result"]
                reused, session = s.session_reused, s.session  # after a read: a TLS 1.3 ticket comes after the handshake
                s.close()
                return reused, session, info
            results = []
            for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # a session resumes with the context it came from
                context.load_verify_locations(sys.argv[2])
                context.minimum_version = context.maximum_version = version
                session = None
                for _ in range(2):
                    reused, session, info = connect(context, session)
                    results.append(reused)
            print(json.dumps({"reused": results, "tls": info["tls"]}))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, "\(port)", pki.caFile]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        let result = try JSONValue(parsing: String(decoding: data, as: UTF8.self))
        XCTAssertEqual(result["reused"], [false, true, false, true], "the second connection of each version resumed")
        // rpcd.info answers inside the fourth handshake's connection: three handshakes before it, one resumed,
        // and its own (resumed, counted when it completed).
        XCTAssertEqual(result["tls"]?["handshakes"], 4)
        XCTAssertEqual(result["tls"]?["resumed"], 2)
    }
}
