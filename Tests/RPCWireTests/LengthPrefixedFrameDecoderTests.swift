import NIOCore
import NIOEmbedded
import NIOTestUtils
import RPCWire
import XCTest

final class LengthPrefixedFrameDecoderTests: XCTestCase {
    func testVerifierAcceptsEverySplitOfSeveralFrames() throws {
        // NIO's verifier feeds the input whole, byte by byte and in random chunks, and checks the decoder
        // emits the same frames every time and leaves nothing behind.
        let payloads = ["{}", "", String(repeating: "x", count: 300), #"{"jsonrpc":"2.0","method":"a.b","id":1}"#]
        var input = ByteBuffer()
        for payload in payloads { input.writeLengthPrefixedFrame(payload) }
        try ByteToMessageDecoderVerifier.verifyDecoder(
            inputOutputPairs: [(input, payloads.map { ByteBuffer(string: $0) })],
            decoderFactory: { LengthPrefixedFrameDecoder(maxFrameSize: 1024) })
    }

    func testFrameSplitAtEveryOffsetIsReassembled() throws {
        let payload = #"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#
        let wire = ByteBuffer(lengthPrefixedFrame: payload)
        for split in 0..<wire.readableBytes {
            let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 1024)))
            try channel.writeInbound(wire.getSlice(at: 0, length: split)!)
            XCTAssertNil(try channel.readInbound(as: ByteBuffer.self), "no frame before all bytes arrived (split \(split))")
            try channel.writeInbound(wire.getSlice(at: split, length: wire.readableBytes - split)!)
            XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), ByteBuffer(string: payload), "split \(split)")
            XCTAssertTrue(try channel.finish().isClean)
        }
    }

    func testZeroLengthFrameIsAnEmptyPayload() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 16)))
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: ""))
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), ByteBuffer())
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testFrameOfExactlyTheMaximumIsAccepted() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 8)))
        try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: "12345678"))
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), ByteBuffer(string: "12345678"))
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testOversizeLengthIsRefusedAsSoonAsTheHeaderArrives() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 1024)))
        var header = ByteBuffer()
        header.writeInteger(UInt32.max, endianness: .big)  // 4 GiB announced, no payload sent
        XCTAssertThrowsError(try channel.writeInbound(header)) { error in
            XCTAssertEqual(error as? FrameTooLargeError, FrameTooLargeError(announcedLength: Int(UInt32.max), maxFrameSize: 1024))
        }
        XCTAssertNil(try channel.readInbound(as: ByteBuffer.self))
        _ = try? channel.finish()
    }

    func testOneByteOverTheMaximumIsRefused() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 8)))
        XCTAssertThrowsError(try channel.writeInbound(ByteBuffer(lengthPrefixedFrame: "123456789"))) { error in
            XCTAssertEqual((error as? FrameTooLargeError)?.announcedLength, 9)
        }
        _ = try? channel.finish()
    }

    func testFramesBeforeAnOversizeOneAreStillDelivered() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 4)))
        var input = ByteBuffer(lengthPrefixedFrame: "ok")
        input.writeInteger(UInt32(5), endianness: .big)
        XCTAssertThrowsError(try channel.writeInbound(input))
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), ByteBuffer(string: "ok"))
        _ = try? channel.finish()
    }

    func testTruncatedFrameAtEndOfStreamIsDroppedWithoutError() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maxFrameSize: 64)))
        var input = ByteBuffer(lengthPrefixedFrame: "complete")
        input.writeInteger(UInt32(10), endianness: .big)
        input.writeString("part")
        try channel.writeInbound(input)
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), ByteBuffer(string: "complete"))
        // The remaining bytes are an incomplete frame: finish() reports them as left over, nothing is emitted.
        XCTAssertNoThrow(try channel.finish())
        XCTAssertNil(try channel.readInbound(as: ByteBuffer.self))
    }

    func testOnlyTLSRecordHeadersLookLikeTLS() {
        func header(_ value: Int) -> Bool { FrameTooLargeError(announcedLength: value, maxFrameSize: 1 << 22).looksLikeTLS }
        XCTAssertTrue(header(0x1603_0100), "a ClientHello")
        XCTAssertTrue(header(0x1503_03FF), "an alert")
        XCTAssertFalse(header(0x1703_0300), "application data never comes first")
        XCTAssertFalse(header(0x0100_0000))
        XCTAssertFalse(header(0x1505_0300))
    }
}
