import NIOCore
import NIOEmbedded
import RPCModuleLink
import RPCTestSupport
import XCTest

/// The link between rpcd and a module host: every message survives the trip through the codec, whole, byte by
/// byte and several to a read; what is no message is an error, never a guess.
final class ModuleLinkCodecTests: XCTestCase {
    private let messages: [ModuleLinkMessage] = [
        .start(ByteBuffer(string: #"{"module":"/m/libkv.so","handler":"kv","service":null,"config":{"File":"/x"}}"#)),
        .ready(ByteBuffer(string: #"{"name":"kv"}"#)),
        .startFailed("init failed: no such file"),
        .call(token: 1, method: 0, params: ByteBuffer(string: "[1,2]")),
        .call(token: .max, method: 7, params: nil),
        .call(token: 3, method: 1, params: ByteBuffer()),
        .cancel(token: 42),
        .result(token: 9, json: ByteBuffer(string: #"{"ok":true}"#)),
        .error(token: 9, code: -32602, message: "Invalid params", data: ByteBuffer(string: #"{"detail":"x"}"#)),
        .error(token: 10, code: 17, message: "", data: nil),
        .log(level: 4, message: "Store full", fields: [.init(name: "rpcd_limit", value: "10"), .init(name: "KEY", value: "")]),
        .log(level: 7, message: "", fields: []),
        .emit(event: "kv.changed", payload: ByteBuffer(string: #"{"key":"a"}"#)),
        .ping(1),
        .pong(.max),
    ]

    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers())
        return channel
    }

    func testEveryMessageSurvivesTheLinkWhole() throws {
        let channel = try channel()
        for message in messages {
            try channel.writeOutbound([message])
            let frame = try XCTUnwrap(channel.readOutbound(as: ByteBuffer.self))
            try channel.writeInbound(frame)
            XCTAssertEqual(try channel.readInbound(as: [ModuleLinkMessage].self), [message])
        }
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testMessagesArriveWholeFedByteByByteAndAllAtOnce() throws {
        var wire = ByteBuffer()
        for message in messages { wire.writeImmutableBuffer(ModuleLinkCodec.frame(message, allocator: ByteBufferAllocator())) }

        let byteByByte = try channel()
        for index in 0..<wire.readableBytes {
            try byteByByte.writeInbound(wire.getSlice(at: wire.readerIndex + index, length: 1)!)
        }
        let allAtOnce = try channel()
        try allAtOnce.writeInbound(wire)
        for channel in [byteByByte, allAtOnce] {
            var arrived: [ModuleLinkMessage] = []
            while let burst = try channel.readInbound(as: [ModuleLinkMessage].self) { arrived += burst }
            XCTAssertEqual(arrived, messages)
            XCTAssertTrue(try channel.finish().isClean)
        }
    }

    /// The messages of a read go on as one array at its end (before the burst's), not boxed one by one; those
    /// before a frame that is no message go on before the error.
    func testAReadsMessagesGoOnTogetherAtItsEnd() throws {
        var wire = ByteBuffer()
        for message in messages { wire.writeImmutableBuffer(ModuleLinkCodec.frame(message, allocator: ByteBufferAllocator())) }
        let channel = try channel()
        channel.pipeline.fireChannelRead(wire)
        XCTAssertEqual(try channel.readInbound(as: [ModuleLinkMessage].self), messages)
        XCTAssertNil(try channel.readInbound(as: [ModuleLinkMessage].self))
        channel.pipeline.fireChannelReadComplete()
        XCTAssertNil(try channel.readInbound(as: [ModuleLinkMessage].self))

        var broken = ModuleLinkCodec.frame(.pong(7), allocator: ByteBufferAllocator())
        broken.writeInteger(UInt32(1))
        broken.writeInteger(UInt8(0xFF))  // a frame whose kind no message has
        XCTAssertThrowsError(try channel.writeInbound(broken))
        XCTAssertEqual(try channel.readInbound(as: [ModuleLinkMessage].self), [.pong(7)])
        _ = try? channel.finish()
    }

    func testAFrameThatIsNoMessageIsAnError() throws {
        let broken: [[UInt8]] = [
            [],  // no kind
            [0],  // unknown kind
            [99],
            [5, 0, 0, 0],  // cancel cut short
            [5, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF],  // cancel with a byte left over
            [4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2],  // call whose params flag is neither 0 nor 1
            [8, 4, 0, 0, 0, 9, 0x41],  // log whose message is cut short
        ]
        for bytes in broken {
            XCTAssertThrowsError(try ModuleLinkMessage(frame: ByteBuffer(bytes: bytes)), "\(bytes)")
            let channel = try channel()
            XCTAssertThrowsError(try channel.writeInbound(ByteBuffer(bytes: WireFrame.bytes(bytes))), "\(bytes)") { error in
                XCTAssertTrue(error is ModuleLinkError, "\(error)")
            }
            _ = try? channel.finish()
        }
    }
}
