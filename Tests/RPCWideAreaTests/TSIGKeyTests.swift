import Foundation
import RPCWideArea
import XCTest

final class TSIGKeyTests: XCTestCase {
    /// What `tsig-keygen rpcd-update` prints (the secret is a made-up one).
    static let keygenOutput = """
        key "rpcd-update" {
        \talgorithm hmac-sha256;
        \tsecret "o+541KtQayTKqO6iuVrRkRDOgtKuTmlGvwQge9q5adw=";
        };

        """

    func testReadsTsigKeygenOutput() throws {
        let key = try TSIGKey(parsing: Self.keygenOutput)
        XCTAssertEqual(key.name, "rpcd-update")
        XCTAssertEqual(key.algorithm, .hmacSHA256)
        XCTAssertEqual(key.secret, "o+541KtQayTKqO6iuVrRkRDOgtKuTmlGvwQge9q5adw=")
    }

    func testCommentsAndOtherClausesAreSkipped() throws {
        let key = try TSIGKey(parsing: "# made by hand\n// for rpcd\n/* two */ key \"k\" { secret \"YWJj\"; algorithm HMAC-SHA512; };")
        XCTAssertEqual(key.algorithm, .hmacSHA512)
        XCTAssertEqual(key.name, "k")
    }

    func testTheSecretIsNeverShown() throws {
        let key = try TSIGKey(parsing: Self.keygenOutput)
        XCTAssertEqual("\(key)", "TSIG key 'rpcd-update' (hmac-sha256)")
        XCTAssertFalse(String(reflecting: key).contains("adw=") && "\(key)".contains("adw="))
    }

    func testBadKeysSayWhatIsMissing() {
        XCTAssertEqual(error { try TSIGKey(parsing: "secret \"abc\";") }, "TSIG key: no 'key \"NAME\" { ... };' clause, as tsig-keygen writes")
        XCTAssertEqual(error { try TSIGKey(parsing: "key \"k\" { secret \"YWJj\"; };") }, "TSIG key: key 'k' has no 'algorithm'")
        XCTAssertEqual(
            error { try TSIGKey(parsing: "key \"k\" { algorithm hmac-md5; secret \"YWJj\"; };") },
            "TSIG key: algorithm 'hmac-md5' is not one rpcd signs with; use hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512")
        XCTAssertEqual(
            error { try TSIGKey(parsing: "key \"k\" { algorithm hmac-sha256; secret \"not base64!\"; };") },
            "TSIG key: key 'k' has no 'secret \"BASE64\";'")
    }

    func testAKeyOtherUsersMayReadIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-tsig-\(UUID().uuidString).key").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.keygenOutput.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o644)
        XCTAssertEqual(
            error { try TSIGKey.load(path: path) },
            "\(path): TSIG key: the key is open to every user (mode 644): run chmod o-rwx \(path)")
        chmod(path, 0o640)
        XCTAssertEqual(try TSIGKey.load(path: path).name, "rpcd-update")
        XCTAssertEqual(error { try TSIGKey.load(path: path + ".missing") }, "\(path).missing: TSIG key: No such file or directory")
    }

    private func error(_ body: () throws -> TSIGKey) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            return "\(error)"
        }
    }
}
