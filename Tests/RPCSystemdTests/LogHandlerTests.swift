import Foundation
import Logging
import RPCLogging
@testable import RPCSystemd
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class LogHandlerTests: XCTestCase {
    private func event(_ level: Logger.Level, _ message: String) -> LogEvent {
        LogEvent(
            level: level, message: "\(message)", metadata: nil, source: "rpcd", file: "rpcd/Daemon.swift",
            function: "run()", line: 42)
    }

    func testJournalFieldsCarryTheEntryAndUpperCasedMetadata() {
        let fields = JournalLogHandler.fields(
            event: event(.warning, "Slow call"),
            metadata: [LogField.method: "calc.add", LogField.durationMicroseconds: "1200", LogField.messageID: "abc",
                       "priority": "spoof"],
            identifier: "rpcd")
        XCTAssertEqual(
            fields,
            ["MESSAGE=Slow call", "PRIORITY=4", "SYSLOG_IDENTIFIER=rpcd", "CODE_FILE=rpcd/Daemon.swift", "CODE_LINE=42",
             "CODE_FUNC=run()", "MESSAGE_ID=abc", "RPCD_PRIORITY=spoof", "RPCD_DURATION_USEC=1200", "RPCD_METHOD=calc.add"])
    }

    func testEntryMetadataLetsTheProviderOverrideTheLoggerAndTheCallOverrideBoth() {
        let provider = Logger.MetadataProvider { ["a": "provider", "b": "provider"] }
        let merged = Logger.Metadata.entry(
            logger: ["a": "logger", "b": "logger", "c": "logger"], provider: provider, event: ["b": "call"])
        XCTAssertEqual(merged, ["a": "provider", "b": "call", "c": "logger"])
        XCTAssertEqual(Logger.Metadata.entry(logger: ["a": "logger"], provider: nil, event: nil), ["a": "logger"])
    }

    func testJournalFieldNamesAreValid() {
        XCTAssertEqual(JournalLogHandler.fieldName("rpcd_conn_id"), "RPCD_CONN_ID")
        XCTAssertEqual(JournalLogHandler.fieldName("sl-service"), "SL_SERVICE")
        XCTAssertEqual(JournalLogHandler.fieldName("_trusted"), "RPCD__TRUSTED")
        XCTAssertEqual(JournalLogHandler.fieldName("9lives"), "RPCD_9LIVES")
        XCTAssertEqual(JournalLogHandler.fieldName("MESSAGE"), "RPCD_MESSAGE")
        XCTAssertEqual(JournalLogHandler.fieldName(String(repeating: "a", count: 100)).count, 64)
    }

    func testSyslogPriorities() {
        XCTAssertEqual(Logger.Level.allCases.map(JournalLogHandler.syslogPriority), [7, 7, 6, 5, 4, 3, 2])
    }

    func testConsoleLineIsReadable() {
        let line = ConsoleLogHandler.line(
            time: Date(timeIntervalSince1970: 1_795_000_000.25), level: .notice, label: "rpcd", message: "Listening",
            metadata: [LogField.listener: "127.0.0.1:7390", LogField.error: "two words", LogField.messageID: "x"])
        XCTAssertEqual(
            line, #"2026-11-18T11:06:40.250Z notice rpcd: Listening rpcd_error="two words" rpcd_listener=127.0.0.1:7390"#)
    }

    /// A value a peer controls cannot break the line: U+0085, U+2028, U+2029 and control characters are
    /// escaped, not written raw (issue 21).
    func testConsoleLineEscapesEveryLineBreakAndControlCharacter() {
        let line = ConsoleLogHandler.line(
            time: Date(timeIntervalSince1970: 0), level: .info, label: "rpcd", message: "Call failed",
            metadata: [LogField.callID: "a\u{2028}b\u{85}c\u{2029}d\re\u{1B}[31mf\\g\nh"])
        XCTAssertEqual(
            line, #"1970-01-01T00:00:00.000Z info rpcd: Call failed rpcd_call_id="a\u{2028}b\u{85}c\u{2029}d\u{d}e\u{1b}[31mf\\g\nh""#)
        XCTAssertFalse(line.contains { $0.isNewline })
    }

    func testConsoleHandlerWritesOneLineAndReadsTheSharedLevel() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        let level = LogLevelControl(.warning)
        var logger = Logger(label: "rpcd") { ConsoleLogHandler(label: $0, level: level, descriptor: fds[1]) }
        logger[metadataKey: LogField.peer] = "unix"
        logger.info("hidden")
        level.level = .info
        logger.info("shown")
        close(fds[1])
        let text = String(decoding: FileHandle(fileDescriptor: fds[0]).readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(text.hasSuffix(" info rpcd: shown rpcd_peer=unix\n"), text)
        XCTAssertEqual(text.split(separator: "\n").count, 1)
    }

    func testJournalIsChosenOnlyWhenStderrIsTheJournalStream() {
        var status = stat()
        XCTAssertEqual(fstat(2, &status), 0)
        XCTAssertEqual(LogOutput.detect(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino)"]), .journal)
        XCTAssertEqual(LogOutput.detect(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"]), .console)
        XCTAssertEqual(LogOutput.detect(environment: ["JOURNAL_STREAM": "garbage"]), .console)
        XCTAssertEqual(LogOutput.detect(environment: [:]), .console)
    }
}
