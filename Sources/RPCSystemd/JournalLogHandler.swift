import CSystemd
package import Logging
package import RPCLogging

#if canImport(Glibc)
import Glibc
#endif

/// A swift-log backend that writes each entry natively to the systemd journal with `sd_journal_sendv`.
///
/// Fields: `MESSAGE`, `PRIORITY` (syslog level), `SYSLOG_IDENTIFIER`, `CODE_FILE`, `CODE_LINE`,
/// `CODE_FUNC`, and every metadata key upper-cased (`rpcd_method` → `RPCD_METHOD`, `message_id` →
/// `MESSAGE_ID`), so `journalctl -u rpcd RPCD_METHOD=calc.add` filters on them (docs/LOGGING.md). The level
/// is read from a shared `LogLevelControl`, so a change at run time reaches every logger. Thread-safe: one
/// datagram per entry. An entry the journal refuses is written to stderr instead, which under systemd still
/// ends up in the journal as plain text.
package struct JournalLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let identifier: String
    private let level: LogLevelControl
    private var ownLevel: Logger.Level?

    package init(identifier: String, level: LogLevelControl, metadataProvider: Logger.MetadataProvider? = nil) {
        self.identifier = identifier
        self.level = level
        self.metadataProvider = metadataProvider
    }

    /// The shared level, unless this logger was given its own (`logger.logLevel = ...`).
    package var logLevel: Logger.Level {
        get { ownLevel ?? level.level }
        set { ownLevel = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let fields = Self.fields(
            event: event, metadata: .entry(logger: metadata, provider: metadataProvider, event: event.metadata),
            identifier: identifier)
        let result = Self.send(fields)
        if result < 0 {
            let line = "rpcd: journal refused an entry (\(SystemdError("sd_journal_sendv", errno: -result))): \(event.message)\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
        }
    }

    /// The journal fields of one entry as `NAME=value` strings, in the order they are sent.
    static func fields(event: LogEvent, metadata: Logger.Metadata, identifier: String) -> [String] {
        var fields = [
            "MESSAGE=\(event.message)",
            "PRIORITY=\(syslogPriority(event.level))",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "CODE_FILE=\(event.file)",
            "CODE_LINE=\(event.line)",
            "CODE_FUNC=\(event.function)",
        ]
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            fields.append("\(fieldName(key))=\(value)")
        }
        return fields
    }

    /// Journal field names are upper-case letters, digits and underscores, start with a letter, and are at
    /// most 64 bytes. A metadata key that would overwrite one of the fields written above gets an `RPCD_`
    /// prefix instead.
    static func fieldName(_ key: String) -> String {
        var name = String(key.uppercased().map { ($0.isASCII && ($0.isLetter || $0.isNumber)) ? $0 : "_" })
        if name.first.map({ !$0.isLetter }) ?? true { name = "RPCD_" + name }
        if reserved.contains(name) { name = "RPCD_" + name }
        return String(name.prefix(64))
    }

    private static let reserved: Set<String> = [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
    ]

    /// syslog(3) priorities (`Logger.Level.syslogPriority`).
    static func syslogPriority(_ level: Logger.Level) -> Int { level.syslogPriority }

    /// One `sd_journal_sendv` call with an iovec per field; values may hold any bytes, newlines included.
    private static func send(_ fields: [String]) -> Int32 {
        var storage = [UInt8]()
        var ranges: [(Int, Int)] = []
        for field in fields {
            let start = storage.count
            storage.append(contentsOf: field.utf8)
            ranges.append((start, storage.count - start))
        }
        return storage.withUnsafeMutableBytes { bytes in
            var vectors = ranges.map { start, length in
                iovec(iov_base: bytes.baseAddress!.advanced(by: start), iov_len: length)
            }
            return sd_journal_sendv(&vectors, Int32(vectors.count))
        }
    }
}
