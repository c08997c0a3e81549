import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import RPCCore
import RPCModuleLink
@testable import RPCModuleHost
@testable import RPCModules
import Synchronization
import XCTest

/// Both ends of the link answer a burst with one write: the host writes the answers to the calls of one read
/// in one buffer, and rpcd hands the answers of one read of the link to each connection as one batch.
final class ModuleLinkBurstTests: XCTestCase {
    func testTheHostAnswersTheCallsOfOneReadWithOneWriteAtTheReadsEnd() throws {
        try ModuleHostLink.withTestModule { channel in
            let allocator = ByteBufferAllocator()

            // 40 calls of `ok` (answered at once, on the host's loop) in one read, then one alone: each
            // read's answers are written as it ends (`writeInbound` ends with `channelReadComplete`), before
            // the loop runs any task.
            for tokens in [1...40, 41...41] {
                var read = ByteBuffer()
                for token in tokens {
                    read.writeImmutableBuffer(ModuleLinkCodec.frame(.call(token: UInt64(token), method: 0, params: nil), allocator: allocator))
                }
                try channel.writeInbound(read)
                var written: [ByteBuffer] = []
                while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written.append(buffer) }
                XCTAssertEqual(written.count, 1, "one write for the burst's answers, with no task run")
                XCTAssertEqual(try ModuleHostLink.messages(in: written), tokens.map { .result(token: UInt64($0), json: ByteBuffer(string: "42")) })
            }
            // Nothing was left for a task to write.
            channel.embeddedEventLoop.run()
            XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self))
            _ = try? channel.finish()
        }
    }

    func testAnOutboxHeldByAReadWritesWhatWasSentWhenReleasedAndOtherwiseOnTheNextTick() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers())
        let outbox = ModuleLinkOutbox(channel: channel)
        outbox.hold()
        outbox.send(.pong(1))
        outbox.send(.pong(2))
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self), "held until released")
        outbox.release()
        XCTAssertEqual(try ModuleHostLink.messages(in: [try XCTUnwrap(channel.readOutbound(as: ByteBuffer.self))]), [.pong(1), .pong(2)])
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self))

        // Not held: one task for the burst, as from a worker thread.
        outbox.send(.pong(3))
        outbox.send(.pong(4))
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self))
        channel.embeddedEventLoop.run()
        XCTAssertEqual(try ModuleHostLink.messages(in: [try XCTUnwrap(channel.readOutbound(as: ByteBuffer.self))]), [.pong(3), .pong(4)])

        // A task already due drains what a hold adds; the release then writes nothing of its own.
        outbox.send(.pong(5))
        outbox.hold()
        outbox.send(.pong(6))
        outbox.release()
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self))
        channel.embeddedEventLoop.run()
        XCTAssertEqual(try ModuleHostLink.messages(in: [try XCTUnwrap(channel.readOutbound(as: ByteBuffer.self))]), [.pong(5), .pong(6)])
        XCTAssertNil(try channel.readOutbound(as: ByteBuffer.self))
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testAnswersOfOneReadGoToEachConnectionAsOneBatchAtItsEnd() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let link = group.next(), other = group.next()
        let here = RecordingOutput(), there = RecordingOutput(), elsewhere = RecordingOutput()
        let unconnected = Mutex<[String]>([])
        // Used on the link's loop, one task at a time, each waited for before the next.
        nonisolated(unsafe) let answers = ModuleLinkAnswers()
        try link.submit {
            for index in 0..<3 {
                answers.deliver(on: link, to: here) { here.record("here \(index)") }
                answers.deliver(on: link, to: there) { there.record("there \(index)") }
                answers.deliver(on: link, to: nil) { unconnected.withLock { $0.append("none \(index)") } }
                answers.deliver(on: other, to: elsewhere) {
                    XCTAssertTrue(other.inEventLoop)
                    elsewhere.record("elsewhere \(index)")
                }
            }
            // Kept until the read ends.
            XCTAssertEqual(here.events + there.events + elsewhere.events, [])
            XCTAssertEqual(unconnected.withLock { $0 }, [])
            answers.finish()
            XCTAssertEqual(here.events, ["burst", "here 0", "here 1", "here 2", "end"])
            XCTAssertEqual(there.events, ["burst", "there 0", "there 1", "there 2", "end"])
            XCTAssertEqual(unconnected.withLock { $0 }, ["none 0", "none 1", "none 2"], "a call without a connection is answered all the same")
        }.wait()
        try other.submit {}.wait()
        XCTAssertEqual(elsewhere.events, ["burst", "elsewhere 0", "elsewhere 1", "elsewhere 2", "end"])
        // Nothing is kept after the burst: the next answer is a batch of its own.
        try link.submit {
            answers.deliver(on: link, to: there) { there.record("next") }
            answers.finish()
            answers.finish()
        }.wait()
        XCTAssertEqual(there.events.suffix(4), ["end", "burst", "next", "end"])
        XCTAssertEqual(here.events.count, 5)
    }
}

/// A connection's output that records what is asked of it.
private final class RecordingOutput: RPCConnectionOutput {
    private let recorded = Mutex<[String]>([])
    var events: [String] { recorded.withLock { $0 } }
    func record(_ event: String) { recorded.withLock { $0.append(event) } }

    var isWritable: Bool { true }
    func writeUnsolicited(_ payload: ByteBuffer) {}
    func flushUnsolicited() {}
    var subscriptions: RPCConnectionSubscriptions? { nil }
    func deliver(_ answers: ArraySlice<RPCConnectionAnswer>) {
        record("burst")
        for answer in answers { answer.complete() }
        record("end")
    }
}
