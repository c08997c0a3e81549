import NIOCore
import NIOEmbedded
import RPCWire
import XCTest

final class LengthPrefixedFrameEncoderTests: XCTestCase {
    private func writes(of payload: ByteBuffer, limit: Int) throws -> [ByteBuffer] {
        let channel = EmbeddedChannel(handler: LengthPrefixedFrameEncoder(coalescingLimit: limit))
        try channel.writeAndFlush(payload).wait()
        var out: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { out.append(buffer) }
        XCTAssertTrue(try channel.finish().isClean)
        return out
    }

    func testSmallPayloadsBecomeOneBufferWithTheirLength() throws {
        let out = try writes(of: ByteBuffer(string: "{\"a\":1}"), limit: 16)
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(Array(out[0].readableBytesView), [0, 0, 0, 7] + Array("{\"a\":1}".utf8))
    }

    func testLargePayloadsAreWrittenUncopiedAfterTheirLength() throws {
        let payload = ByteBuffer(repeating: UInt8(ascii: "x"), count: 17)
        let out = try writes(of: payload, limit: 16)
        XCTAssertEqual(out.count, 2)
        XCTAssertEqual(Array(out[0].readableBytesView), [0, 0, 0, 17])
        XCTAssertEqual(out[1], payload)
    }

    func testEmptyPayloadAndRoundTripThroughTheDecoder() throws {
        XCTAssertEqual(Array(try writes(of: ByteBuffer(), limit: 16)[0].readableBytesView), [0, 0, 0, 0])
        var stream = ByteBuffer()
        for size in [0, 3, 16, 17, 5000] {
            for part in try writes(of: ByteBuffer(repeating: UInt8(size % 251), count: size), limit: 16) {
                var part = part
                stream.writeBuffer(&part)
            }
        }
        let decoder = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 1 << 20)))
        try decoder.writeInbound(stream)
        var sizes: [Int] = []
        while let frame = try decoder.readInbound(as: ByteBuffer.self) { sizes.append(frame.readableBytes) }
        XCTAssertEqual(sizes, [0, 3, 16, 17, 5000])
        XCTAssertTrue(try decoder.finish().isClean)
    }
}
