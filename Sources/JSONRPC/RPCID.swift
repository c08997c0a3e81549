package import NIOCore
package import RPCJSON

/// A request id exactly as the client wrote it: the raw JSON text of a string, number or `null`.
///
/// Keeping the bytes (not a decoded value) is what lets rpcd echo any id unchanged, including integers
/// beyond 64 bits, numbers like `1.0e2` and strings with escapes.
package struct RPCID: Hashable, Sendable {
    /// The JSON token, e.g. `"abc"` (quotes included), `42`, `null`.
    package let rawJSON: ByteBuffer

    /// Wraps a token that the envelope parser validated.
    package init(rawJSON: ByteBuffer) {
        self.rawJSON = rawJSON
    }

    /// The id `null`: used in replies when the request's id could not be determined.
    package static let null = RPCID(rawJSON: ByteBuffer(string: "null"))

    package init(_ value: Int) {
        self.rawJSON = ByteBuffer(string: String(value))
    }

    package init(_ value: String) {
        var bytes: [UInt8] = []
        JSONString.appendQuoted(value, to: &bytes)
        self.rawJSON = ByteBuffer(bytes: bytes)
    }

    /// The id as a JSON value (for logs, clients and tests).
    package var value: JSONValue {
        rawJSON.withUnsafeReadableBytes { (try? JSONValue(parsing: $0)) ?? .null }
    }
}

extension RPCID: CustomStringConvertible {
    package var description: String { String(buffer: rawJSON) }
}
