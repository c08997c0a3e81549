import NIOCore
import NIOEmbedded
@testable import RPCModuleHost
import XCTest

/// A handler program's output and log are cut into lines (docs/HANDLER-PROTOCOL.md §1, §7).
final class LineCutterTests: XCTestCase {
    private func lines(_ input: String, maxLength: Int, cutsLongLines: Bool) throws -> [String] {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LineCutter(maxLength: maxLength, cutsLongLines: cutsLongLines)))
        try channel.writeInbound(ByteBuffer(string: input))
        var lines: [String] = []
        while let line = try channel.readInbound(as: ByteBuffer.self) { lines.append(String(buffer: line)) }
        _ = try? channel.finish()
        return lines
    }

    func testLinesAreCutAtLineFeedsAndAHalfLineAtTheEndIsDropped() throws {
        XCTAssertEqual(try lines("a\nbc\n\nhalf", maxLength: 8, cutsLongLines: false), ["a", "bc", ""])
    }

    func testAnOutputLinePastTheLimitIsAnError() {
        XCTAssertThrowsError(try lines("0123456789\n", maxLength: 4, cutsLongLines: false))
        XCTAssertThrowsError(try lines("0123456789", maxLength: 4, cutsLongLines: false), "known too long before its end")
    }

    func testALogLinePastTheLimitMakesFurtherEntries() throws {
        XCTAssertEqual(try lines("0123456789\nnext\n", maxLength: 4, cutsLongLines: true), ["0123", "4567", "89", "next"])
    }
}
