package import Foundation

/// A small private CA made at run time with openssl, with the commands docs/SECURITY.md gives administrators:
/// a CA, a server certificate for `localhost` and 127.0.0.1, and client certificates it signs. Keys are
/// throw-away EC P-256 keys in the test's temporary directory; nothing is committed.
package struct TestPKI {
    package let directory: URL
    package let name: String

    /// Makes CA `name` (files `NAME-ca.pem`, `NAME-ca.key`) in `directory`.
    package init(in directory: URL, name: String = "test") throws {
        self.directory = directory
        self.name = name
        try Self.openssl(in: directory, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30",
            "-subj", "/CN=rpcd \(name) CA", "-keyout", "\(name)-ca.key", "-out", "\(name)-ca.pem",
        ])
    }

    /// A CA in a fresh temporary directory of its own; `removeDirectory()` when the test is done.
    package static func inTemporaryDirectory(name: String = "test") throws -> TestPKI {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rpcd-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try TestPKI(in: directory, name: name)
    }

    package func removeDirectory() {
        try? FileManager.default.removeItem(at: directory)
    }

    package var caFile: String { path("\(name)-ca.pem") }

    package func path(_ file: String) -> String { directory.appendingPathComponent(file).path }

    /// Issues `file.pem` and `file.key` for `commonName`, with the given alternative names and usage.
    @discardableResult
    package func issue(_ file: String, commonName: String, alternativeNames: String, usage: String) throws -> (certificate: String, key: String) {
        try "subjectAltName=\(alternativeNames)\nextendedKeyUsage=\(usage)\n".write(
            toFile: path("\(file).ext"), atomically: true, encoding: .utf8)
        try Self.openssl(in: directory, [
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(commonName)",
            "-keyout", "\(file).key", "-out", "\(file).csr",
        ])
        try Self.openssl(in: directory, [
            "x509", "-req", "-in", "\(file).csr", "-CA", "\(name)-ca.pem", "-CAkey", "\(name)-ca.key",
            "-CAcreateserial", "-days", "30", "-extfile", "\(file).ext", "-out", "\(file).pem",
        ])
        return (path("\(file).pem"), path("\(file).key"))
    }

    /// A server certificate for localhost and 127.0.0.1.
    package func issueServer(_ file: String = "server") throws -> (certificate: String, key: String) {
        try issue(file, commonName: "localhost", alternativeNames: "DNS:localhost,IP:127.0.0.1", usage: "serverAuth")
    }

    /// A client certificate for `commonName` (with an e-mail alternative name).
    package func issueClient(_ commonName: String) throws -> (certificate: String, key: String) {
        try issue(commonName, commonName: commonName, alternativeNames: "email:\(commonName)@example.org", usage: "clientAuth")
    }

    private static func openssl(in directory: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw OpenSSLFailure(description: "openssl \(arguments.joined(separator: " ")) failed: \(text)")
        }
    }
}

package struct OpenSSLFailure: Error, CustomStringConvertible {
    package var description: String
}
