#if canImport(Glibc)
import Glibc
#endif

/// A TSIG key (RFC 8945) as `tsig-keygen` writes it, the file BIND's `named.conf` includes too:
///
///     key "rpcd-update" {
///         algorithm hmac-sha256;
///         secret "c2VjcmV0IGJ5dGVzIGdvIGhlcmUgaW4gYmFzZTY0Lg==";
///     };
///
/// `description` never shows the secret, so a key can be logged or interpolated by mistake without leaking.
package struct TSIGKey: Hashable, Sendable, CustomStringConvertible {
    /// The key's name, as the server knows it (`rpcd-update`).
    package var name: String
    /// The HMAC algorithm (`hmac-sha256`); RFC 8945 §6 makes it mandatory to implement.
    package var algorithm: Algorithm
    /// The shared secret in base64, as in the file.
    package var secret: String

    package enum Algorithm: String, CaseIterable, Hashable, Sendable {
        case hmacSHA1 = "hmac-sha1"
        case hmacSHA224 = "hmac-sha224"
        case hmacSHA256 = "hmac-sha256"
        case hmacSHA384 = "hmac-sha384"
        case hmacSHA512 = "hmac-sha512"

        /// The algorithm's domain name, as ldns wants it.
        package var dnsName: String { rawValue + "." }
    }

    package init(name: String, algorithm: Algorithm, secret: String) {
        self.name = name
        self.algorithm = algorithm
        self.secret = secret
    }

    package var description: String { "TSIG key '\(name)' (\(algorithm.rawValue))" }

    /// Reads the first `key` clause of `text`. Errors say what is missing, never quoting the secret.
    package init(parsing text: String) throws(TSIGKeyError) {
        let tokens = Self.tokens(of: text)
        guard let keyIndex = tokens.firstIndex(of: "key"), keyIndex + 2 < tokens.count, tokens[keyIndex + 2] == "{" else {
            throw TSIGKeyError("no 'key \"NAME\" { ... };' clause, as tsig-keygen writes")
        }
        let name = Self.unquoted(tokens[keyIndex + 1])
        guard !name.isEmpty else { throw TSIGKeyError("the key has no name") }
        var algorithm: Algorithm?
        var secret: String?
        var index = keyIndex + 3
        while index + 1 < tokens.count, tokens[index] != "}" {
            let (word, value) = (tokens[index], Self.unquoted(tokens[index + 1]))
            switch word {
            case "algorithm":
                guard let known = Algorithm(rawValue: value.lowercased()) else {
                    throw TSIGKeyError(
                        "algorithm '\(value)' is not one rpcd signs with; use "
                            + Algorithm.allCases.map(\.rawValue).joined(separator: ", "))
                }
                algorithm = known
            case "secret":
                secret = value
            default:
                break
            }
            index += 2
            if index < tokens.count, tokens[index] == ";" { index += 1 }
        }
        guard let algorithm else { throw TSIGKeyError("key '\(name)' has no 'algorithm'") }
        guard let secret, !secret.isEmpty, secret.utf8.allSatisfy(Self.isBase64) else {
            throw TSIGKeyError("key '\(name)' has no 'secret \"BASE64\";'")
        }
        self.init(name: name, algorithm: algorithm, secret: secret)
    }

    /// Reads a key file after checking that other users cannot read it, as for a TLS private key: a secret
    /// every local user can read is one every local user can sign zone changes with.
    package static func load(path: String) throws(TSIGKeyError) -> TSIGKey {
        var status = stat()
        guard stat(path, &status) == 0 else { throw TSIGKeyError(file: path, String(cString: strerror(errno))) }
        let mode = status.st_mode & 0o777
        guard mode & 0o007 == 0 else {
            throw TSIGKeyError(
                file: path, "the key is open to every user (mode \(String(mode, radix: 8))): run chmod o-rwx \(path)")
        }
        // Owned by root or by the user rpcd runs as: anyone else could replace the key.
        guard status.st_uid == 0 || status.st_uid == geteuid() else {
            throw TSIGKeyError(file: path, "the key is owned by uid \(status.st_uid), neither root nor rpcd's user: run chown root \(path)")
        }
        guard let file = fopen(path, "r") else { throw TSIGKeyError(file: path, String(cString: strerror(errno))) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[..<count]
            if bytes.count > 65_536 { throw TSIGKeyError(file: path, "larger than 64 KiB; not a tsig-keygen key file") }
        }
        do {
            return try TSIGKey(parsing: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw TSIGKeyError(file: path, error.reason)
        }
    }

    /// Words, quoted strings, braces and semicolons; `#`, `//` and `/* */` comments dropped as named.conf does.
    private static func tokens(of text: String) -> [String] {
        var tokens: [String] = []
        var current = ""
        var characters = Array(text)[...]
        func flush() {
            if !current.isEmpty { tokens.append(current) }
            current = ""
        }
        while let character = characters.popFirst() {
            switch character {
            case "\"":
                flush()
                var quoted = "\""
                while let next = characters.popFirst(), next != "\"" { quoted.append(next) }
                tokens.append(quoted + "\"")
            case "{", "}", ";":
                flush()
                tokens.append(String(character))
            case "#":
                flush()
                while let next = characters.popFirst(), next != "\n" {}
            case "/" where characters.first == "/":
                flush()
                while let next = characters.popFirst(), next != "\n" {}
            case "/" where characters.first == "*":
                flush()
                characters.removeFirst()
                while let next = characters.popFirst(), !(next == "*" && characters.first == "/") {}
                _ = characters.popFirst()
            case _ where character.isWhitespace:
                flush()
            default:
                current.append(character)
            }
        }
        flush()
        return tokens
    }

    private static func unquoted(_ token: String) -> String {
        guard token.count >= 2, token.first == "\"", token.last == "\"" else { return token }
        return String(token.dropFirst().dropLast())
    }

    private static func isBase64(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }
}

/// A key file that cannot be used; the message names the file and the fix.
package struct TSIGKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    package var file: String?
    package var reason: String

    package init(file: String? = nil, _ reason: String) {
        self.file = file
        self.reason = reason
    }

    package var description: String { (file.map { "\($0): " } ?? "") + "TSIG key: " + reason }
}
