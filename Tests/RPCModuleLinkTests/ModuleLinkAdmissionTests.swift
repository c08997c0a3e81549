import NIOCore
import NIOEmbedded
import RPCModuleLink
import XCTest

/// rpcd's end of the link admits each frame it gathers across reads, from its length and head alone and before
/// its buffer is allocated (`ModuleLinkFrameReceiver.Admission`): a held frame arrives whole, a skipped one is
/// dropped as it arrives and the next frame is read in step, a refused one is an error. Frames are fed byte by
/// byte, in reads of a few bytes, and all at once.
final class ModuleLinkAdmissionTests: XCTestCase {
    private let big = ModuleLinkMessage.result(token: 7, json: ByteBuffer(string: "\"" + String(repeating: "x", count: 4000) + "\""))
    private let other = ModuleLinkMessage.result(token: 8, json: ByteBuffer(string: "[1]"))
    private let log = ModuleLinkMessage.log(level: 6, message: "m", fields: [])

    private var wire: ByteBuffer {
        var wire = ByteBuffer()
        for message in [big, log, other] { wire.writeImmutableBuffer(ModuleLinkCodec.frame(message, allocator: ByteBufferAllocator())) }
        return wire
    }

    /// The messages that come out when `wire` is fed in reads of `step` bytes, with `decide` as the admission;
    /// and what the admission was asked (token, length).
    private func receive(step: Int, _ decide: @escaping @Sendable (UInt64?) -> ModuleLinkFrameReceiver.Admission) throws -> ([ModuleLinkMessage], [(UInt64?, Int)], Error?) {
        let questions = Questions()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers { head, length in
            let token = ModuleLinkMessage.answerToken(head: head)
            questions.asked.append((token, length))
            return decide(token)
        })
        var wire = wire
        var failure: Error?
        do {
            while wire.readableBytes > 0 { try channel.writeInbound(wire.readSlice(length: min(step, wire.readableBytes))!) }
        } catch {
            failure = error
        }
        var messages: [ModuleLinkMessage] = []
        while let burst = try channel.readInbound(as: [ModuleLinkMessage].self) { messages += burst }
        _ = try? channel.finish()
        return (messages, questions.asked, failure)
    }

    /// What the admission was asked: by the `EmbeddedChannel`'s handlers, on the test's own thread.
    private final class Questions: @unchecked Sendable {
        var asked: [(UInt64?, Int)] = []
    }

    func testAHeldFrameArrivesWholeAndOnlyGatheredFramesAreAsked() throws {
        for step in [1, 3, 11, 1000] {
            let (messages, asked, failure) = try receive(step: step) { _ in .hold }
            XCTAssertNil(failure)
            XCTAssertEqual(messages, [big, log, other], "step \(step)")
            XCTAssertEqual(asked.first?.0, 7, "step \(step): the reply is admitted by its token")
            XCTAssertEqual(asked.first?.1, 1 + 8 + 4002, "step \(step): with its payload's length")
        }
        let (messages, asked, _) = try receive(step: 1 << 20) { _ in .hold }
        XCTAssertEqual(messages, [big, log, other])
        XCTAssertTrue(asked.isEmpty, "frames whole within a read are slices of it, not gathered")
    }

    func testASkippedFrameIsDroppedAndTheNextOnesAreReadInStep() throws {
        for step in [1, 3, 11, 1000] {
            let (messages, _, failure) = try receive(step: step) { token in token == 7 ? .skip : .hold }
            XCTAssertNil(failure)
            XCTAssertEqual(messages, [log, other], "step \(step)")
        }
    }

    func testARefusedFrameIsAnError() throws {
        let (messages, _, failure) = try receive(step: 100) { token in token == 7 ? .refuse("too large") : .hold }
        XCTAssertEqual(messages, [])
        XCTAssertEqual((failure as? ModuleLinkError)?.description, "too large")
    }
}
