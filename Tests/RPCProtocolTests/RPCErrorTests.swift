import RPCJSON
import RPCProtocol
import XCTest

final class RPCErrorTests: XCTestCase {
    private static let protocolDocument = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")

    /// docs/PROTOCOL.md's error tables list exactly the codes rpcd sends, each with its message.
    func testProtocolDocumentListsEveryCodeWithItsMessage() throws {
        let text = try String(contentsOf: Self.protocolDocument, encoding: .utf8)
        var documented: [Int: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| -32") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2, let code = Int(cells[0]) else { continue }
            documented[code] = cells[1]
        }
        XCTAssertEqual(documented, RPCError.Code.messages)
    }

    /// Each code's `data` column names exactly the members rpcd's factory puts in `data` ("—": no data), so a
    /// client reads -32601's `method` where the table says it is.
    func testProtocolDocumentListsEachCodesDataMembers() throws {
        let text = try String(contentsOf: Self.protocolDocument, encoding: .utf8)
        var documented: [Int: Set<String>] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| -32") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let code = Int(cells[0]) else { continue }
            documented[code] = Set(cells[2].matches(of: /"([a-z_]+)":/).map { String($0.output.1) })
        }
        // A code with several factories (-32005 for a handler not loaded, and for a module host that cannot
        // answer) documents the members of them all.
        var sent: [Int: Set<String>] = [:]
        for error in Self.everyError {
            sent[error.code, default: []].formUnion(error.data?.objectValue?.keys.map { $0 } ?? [])
        }
        for (code, members) in sent {
            XCTAssertEqual(documented[code], members, "data of \(code)")
        }
    }

    static let everyError: [RPCError] = [
        .parseError("x"), .invalidRequest("x"), .methodNotFound("a.b"), .invalidParams("x"), .internalError,
        .frameTooLarge(announced: 2, limit: 1), .batchTooLarge(limit: 1), .nestingTooDeep(limit: 1),
        .timeout(after: 1), .serviceBusy("s"), .serviceUnavailable("s"), .shuttingDown, .accessDenied("a.b"), .replyTooLarge(limit: 1),
        .serverBusy(limit: 1), .frameTimeout(seconds: 1), .callCancelled, .tooManySubscriptions(limit: 1),
        .reloadFailed("x"), .serviceUnavailable("s", handler: "h", reason: "crashed", termination: "SIGSEGV"),
        .serviceUnavailable("s", refusedHandler: "h", detail: "x"),
        .commandFailed(exitStatus: 2, signal: nil, standardError: "x"), .commandFailed(exitStatus: nil, signal: "SIGKILL", standardError: ""),
        .commandOutputTooLarge(limit: 1),
    ]

    func testEveryCodeIsInTheReservedRange() {
        for code in RPCError.Code.messages.keys { XCTAssertTrue(RPCError.Code.reserved.contains(code), "\(code)") }
    }

    func testFactoriesUseTheStandardMessages() {
        let errors = Self.everyError
        XCTAssertEqual(Set(errors.map(\.code)), Set(RPCError.Code.messages.keys))
        for error in errors { XCTAssertEqual(error.message, RPCError.Code.messages[error.code]) }
    }

    func testOtherErrorsBecomeInternalErrorAndAreFlaggedForTheLog() {
        struct Secret: Error {}
        struct Convertible: RPCErrorConvertible { var rpcError: RPCError { RPCError(code: 7, message: "Seven") } }
        XCTAssertEqual(RPCError(from: Secret()), .internalError)
        XCTAssertTrue(RPCError.isUnexpected(Secret()))
        XCTAssertEqual(RPCError(from: Convertible()).code, 7)
        XCTAssertFalse(RPCError.isUnexpected(Convertible()))
        XCTAssertEqual(RPCError(from: RPCError.serviceBusy("kv")), .serviceBusy("kv"))
        XCTAssertFalse(RPCError.isUnexpected(RPCError.shuttingDown))
    }
}
