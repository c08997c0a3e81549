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
package import Logging
package import RPCLogging

/// A swift-log backend for a terminal or a plain file: one readable line per entry on standard error,
///
///     2026-11-22T05:30:00.123Z notice rpcd: Listening rpcd_listener=127.0.0.1:7390
///
/// time (UTC), level, label, the message, then the metadata as sorted `key=value` pairs (values with
/// blanks quoted). Used whenever stderr is not connected to the journal. Each line is one `write(2)`, so
/// lines from different threads never interleave. The level is read from a shared `LogLevelControl`.
package struct ConsoleLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let level: LogLevelControl
    private var ownLevel: Logger.Level?
    private let descriptor: Int32

    package init(label: String, level: LogLevelControl, descriptor: Int32 = 2, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.level = level
        self.descriptor = descriptor
        self.metadataProvider = metadataProvider
    }

    package var logLevel: Logger.Level {
        get { ownLevel ?? level.level }
        set { ownLevel = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let all = Logger.Metadata.entry(logger: metadata, provider: metadataProvider, event: event.metadata)
        let line = Self.line(time: Date(), level: event.level, label: label, message: "\(event.message)", metadata: all)
        DescriptorOutput.write(line + "\n", to: descriptor)
    }

    /// The line without its newline. `message_id` is left out: it is for the journal, not for people.
    static func line(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var line = "\(timestamp(time)) \(level) \(label): \(message.map { $0.isNewline ? " " : String($0) }.joined())"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) where key != LogField.messageID {
            line += " \(key)=\(quoted("\(value)"))"
        }
        return line
    }

    /// `value` as one word of the line: quoted when it holds a blank, a quote or anything that is not printed as
    /// itself, with every line break and control character escaped (`\n`, `\u{2028}`): a peer's id must not
    /// start a line of its own on any terminal or log viewer (U+0085, U+2028 and U+2029 break lines too).
    private static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.unicodeScalars.contains(where: { $0 == " " || $0 == "\"" || $0 == "\\" || isUnprintable($0) })
        else { return value }
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            case _ where isUnprintable(scalar): escaped += "\\u{\(String(scalar.value, radix: 16))}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }

    /// Control characters (C0, DEL, C1 such as U+0085) and the line and paragraph separators.
    private static func isUnprintable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    private static func timestamp(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        let millis = Int((date.timeIntervalSince1970 - Double(time)) * 1000)
        let date = "\(digits(Int(parts.tm_year) + 1900, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-\(digits(Int(parts.tm_mday), 2))"
        let clock = "\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):\(digits(Int(parts.tm_sec), 2))"
        return "\(date)T\(clock).\(digits(millis, 3))Z"
    }

    /// `value` with leading zeros to `width` digits.
    private static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
