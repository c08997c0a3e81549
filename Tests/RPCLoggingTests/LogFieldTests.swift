import RPCLogging
import XCTest

/// The field names are defined once (`LogField`) and documented once (docs/LOGGING.md); these tests keep the
/// two, and the code, in step.
final class LogFieldTests: XCTestCase {
    private static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    func testEveryFieldIsDocumentedInLoggingMD() throws {
        let documentation = try String(contentsOf: Self.repository.appendingPathComponent("docs/LOGGING.md"), encoding: .utf8)
        for field in LogField.all {
            XCTAssertTrue(documentation.contains("| `\(field)` |"), "docs/LOGGING.md has no row for \(field)")
        }
    }

    func testEveryDocumentedRPCDFieldExists() throws {
        let documentation = try String(contentsOf: Self.repository.appendingPathComponent("docs/LOGGING.md"), encoding: .utf8)
        let documented = documentation.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `rpcd_") else { return nil }
            return String(line.dropFirst(3).prefix { $0 != "`" })
        }
        XCTAssertFalse(documented.isEmpty)
        XCTAssertEqual(Set(documented).subtracting(LogField.all), [], "documented but not in LogField")
    }

    func testNamesAreUniqueAndJournalSafe() {
        XCTAssertEqual(Set(LogField.all).count, LogField.all.count)
        for field in LogField.all {
            XCTAssertTrue(field.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }, field)
        }
    }

    /// No source file outside LogField.swift spells a field name: each log call uses the constants.
    func testNoSourceFileSpellsAFieldName() throws {
        let sources = Self.repository.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" && $0.lastPathComponent != "LogField.swift" }
        XCTAssertFalse(files.isEmpty)
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for field in LogField.all where field.hasPrefix("rpcd_") {
                XCTAssertFalse(text.contains("\"\(field)\""), "\(file.lastPathComponent) spells \"\(field)\"; use LogField")
            }
        }
    }
}

final class LogValueTests: XCTestCase {
    func testLongValuesAreCutAtACharacterBoundaryAndSayHowLongTheyWere() {
        XCTAssertEqual(LogValue.truncated("short"), "short")
        let long = String(repeating: "é", count: 100)  // 200 bytes
        let cut = LogValue.truncated(long)
        XCTAssertEqual(cut, String(repeating: "é", count: 64) + "… (200 bytes)")
        XCTAssertLessThanOrEqual(cut.utf8.count, LogValue.maxBytes + 20)
    }
}
