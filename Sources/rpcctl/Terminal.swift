import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import RPCJSON
import RPCLogging

/// Output helpers: results on stdout, diagnostics on stderr prefixed `rpcctl: `.
enum Terminal {
    /// Writes `message` to stderr; its first line gets the `rpcctl: ` prefix.
    static func error(_ message: String) {
        let text = message.hasPrefix("rpcctl: ") ? message : "rpcctl: " + message
        DescriptorOutput.standardError(text.hasSuffix("\n") ? text : text + "\n")
    }

    /// A line on stderr without prefix (continuation of an error, progress).
    static func note(_ line: String) {
        DescriptorOutput.standardError(line + "\n")
    }

    /// One JSON document on stdout (compact, one line).
    static func printJSON(_ value: JSONValue) {
        print(value.jsonText)
    }

    /// A decimal with exactly `digits` fraction digits: `format(0.2134, digits: 3)` is "0.213".
    static func format(_ value: Double, digits: Int) -> String {
        FixedPointText.text(value, digits: digits)
    }

    /// Seconds for humans: "10", "0.5", "2.25".
    static func seconds(_ value: Double) -> String {
        if value == value.rounded() { return String(Int(value)) }
        var text = format(value, digits: 3)
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }

    /// A JSON number rounded to `digits` fraction digits.
    static func number(_ value: Double, digits: Int) -> JSONValue {
        guard value.isFinite else { return .null }
        let scale = pow(10, Double(digits))
        return .number((value * scale).rounded() / scale)
    }
}

/// sysexits(3) statuses rpcctl uses besides 0, 1 and ArgumentParser's 64.
enum ExitStatus {
    /// The server answered with a JSON-RPC error (or a benchmark failed).
    static let remoteError = ExitCode(1)
    /// EX_DATAERR: `--api` and the service's interface fingerprint differ; nothing was called.
    static let incompatible = ExitCode(65)
    /// EX_UNAVAILABLE: cannot connect (or no instance of the service was found).
    static let unavailable = ExitCode(69)
    /// EX_TEMPFAIL: no reply in time.
    static let timedOut = ExitCode(75)
    /// EX_PROTOCOL: the connection broke or the reply was not valid JSON-RPC.
    static let protocolError = ExitCode(76)
}
