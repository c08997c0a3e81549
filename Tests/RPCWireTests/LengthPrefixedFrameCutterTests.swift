import NIOCore
import RPCTestSupport
import RPCWire
import XCTest

/// `LengthPrefixedFrameCutter` alone, without a channel: the frames the wire format defines however the stream
/// is cut into reads, slices where a frame is whole within a read, the buffer a gathered frame gets, admission,
/// and stopping. (Its decoder form is checked with NIO's verifier in `LengthPrefixedFrameDecoderTests`; the
/// handlers around it in their own targets' tests.)
final class LengthPrefixedFrameCutterTests: XCTestCase {
    /// What comes out of `cutter` for one read: the payloads, and whether it stopped on a length too large.
    private func cut(_ read: ByteBuffer, with cutter: inout LengthPrefixedFrameCutter, decide: (ByteBuffer, Int) -> LengthPrefixedFrameCutter.Admission = { _, _ in .hold }) -> (frames: [ByteBuffer], tooLarge: FrameTooLargeError?) {
        var input = read
        var frames: [ByteBuffer] = []
        while true {
            switch cutter.next(from: &input) {
            case .frame(let frame): frames.append(frame)
            case .admit(let head, let length): cutter.decide(decide(head, length))
            case .needMoreData, .stopped: return (frames, nil)
            case .tooLarge(let error): return (frames, error)
            }
        }
    }

    /// Random streams, some with lengths above the maximum, cut into reads of 1 to 40 bytes at random, with
    /// whole allocation, with growth only and with an admission that holds everything: the frames and the
    /// refusal are what a plain reading of the stream gives, and a stopped cutter takes nothing more.
    func testFramesAreTheSameHoweverTheStreamIsCut() {
        var random = SeededLCG(seed: 38)
        for round in 0..<300 {
            let maxFrameSize = 200
            let stream = random.frameStream(maxLength: 230)
            let expected = WireReading(stream, maxFrameSize: maxFrameSize)
            let cutters = [
                LengthPrefixedFrameCutter(maxFrameSize: maxFrameSize),
                LengthPrefixedFrameCutter(maxFrameSize: maxFrameSize, wholeAllocationLimit: 0),
                LengthPrefixedFrameCutter(maxFrameSize: maxFrameSize, admissionHeadSize: 3),
            ]
            for (variant, original) in cutters.enumerated() {
                var cutter = original
                var frames: [[UInt8]] = []
                var tooLarge = false
                var offset = 0
                while offset < stream.count {
                    let length = min(Int(random.next() % 40) + 1, stream.count - offset)
                    let result = cut(ByteBuffer(bytes: stream[offset..<(offset + length)]), with: &cutter)
                    frames += result.frames.map { Array($0.readableBytesView) }
                    if result.tooLarge != nil {
                        XCTAssertFalse(tooLarge, "round \(round), cutter \(variant): one refusal")
                        tooLarge = true
                    }
                    offset += length
                }
                XCTAssertEqual(frames, expected.frames, "round \(round), cutter \(variant)")
                XCTAssertEqual(tooLarge, expected.tooLarge, "round \(round), cutter \(variant)")
                XCTAssertEqual(cutter.isStopped, expected.tooLarge, "round \(round), cutter \(variant)")
                if !expected.tooLarge {
                    XCTAssertEqual(cutter.arrivingFrameSize, expected.incompleteLength.map { $0 + 4 }, "round \(round), cutter \(variant)")
                }
            }
        }
    }

    func testFramesWholeInAReadAreSlicesOfIt() {
        var cutter = LengthPrefixedFrameCutter(maxFrameSize: 100)
        var read = ByteBuffer()
        read.writeLengthPrefixedFrame("first")
        read.writeLengthPrefixedFrame("second")
        read.writeBytes([0, 0])
        let base = read.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        let (frames, _) = cut(read, with: &cutter)
        XCTAssertEqual(frames.map { String(buffer: $0) }, ["first", "second"])
        XCTAssertEqual(frames.map { $0.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } }, [base + 4, base + 13])
        XCTAssertEqual(cutter.heldCapacity, 4, "the start of a length is kept in a buffer for the length")
        XCTAssertNil(cutter.arrivingFrameSize)
    }

    /// A frame that spans reads gets a buffer for all of it as soon as its length is known, which never grows;
    /// the frames after it in its last read are slices of that read again.
    func testAGatheredFrameIsAllocatedWholeOnce() {
        var cutter = LengthPrefixedFrameCutter(maxFrameSize: 1 << 20)
        let payload = ByteBuffer(repeating: 7, count: 100_000)
        var wire = ByteBuffer()
        wire.writeLengthPrefixedFrame(payload)
        wire.writeLengthPrefixedFrame("after")
        XCTAssertTrue(cut(wire.readSlice(length: 2)!, with: &cutter).frames.isEmpty)
        XCTAssertNil(cutter.arrivingFrameSize, "the length is not known yet")
        XCTAssertTrue(cut(wire.readSlice(length: 1000)!, with: &cutter).frames.isEmpty)
        XCTAssertEqual(cutter.arrivingFrameSize, 100_004)
        let capacity = cutter.heldCapacity
        XCTAssertGreaterThanOrEqual(capacity, 100_004)
        var frames: [ByteBuffer] = []
        while wire.readableBytes > 9 {
            frames += cut(wire.readSlice(length: min(30_000, wire.readableBytes - 9))!, with: &cutter).frames
            if frames.isEmpty { XCTAssertEqual(cutter.heldCapacity, capacity, "never grows") }
        }
        let last = wire
        frames += cut(wire, with: &cutter).frames
        XCTAssertEqual(frames.map(\.readableBytes), [100_000, 5])
        XCTAssertEqual(frames[0], payload)
        XCTAssertEqual(
            frames[1].withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) },
            last.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } + 4)
        XCTAssertEqual(cutter.heldCapacity, 0)
    }

    /// A frame's rest read straight into its buffer (as `ModuleLinkFrameReceiver` reads a link's socket): the
    /// frame taken out says what it lacks, its buffer is the one allocated whole and has room for all of it, and
    /// the frame put back is handed on by the next cut, an empty read; with nothing being gathered, nothing is
    /// taken out.
    func testTheRestOfAGatheredFrameIsReadIntoItsBuffer() {
        var cutter = LengthPrefixedFrameCutter(maxFrameSize: 1 << 20)
        XCTAssertNil(cutter.takeGathered(), "nothing is gathered")
        let payload = ByteBuffer(bytes: (0..<50_000).map { UInt8(truncatingIfNeeded: $0) })
        var wire = ByteBuffer()
        wire.writeLengthPrefixedFrame(payload)
        XCTAssertTrue(cut(wire.readSlice(length: 1000)!, with: &cutter).frames.isEmpty)
        let capacity = cutter.heldCapacity
        var missing: [Int] = []
        var frames: [ByteBuffer] = []
        while frames.isEmpty {
            guard var frame = cutter.takeGathered() else { return XCTFail("the frame is being gathered") }
            missing.append(frame.missing)
            XCTAssertEqual(frame.buffer.capacity, capacity, "the buffer allocated whole")
            XCTAssertGreaterThanOrEqual(frame.buffer.writableBytes, frame.missing)
            XCTAssertEqual(cutter.heldCapacity, 0, "held by the caller meanwhile")
            var part = wire.readSlice(length: min(frame.missing, 20_000))!
            frame.buffer.writeBuffer(&part)
            cutter.putBack(frame.buffer)
            frames = cut(ByteBuffer(), with: &cutter).frames
        }
        XCTAssertEqual(missing, [49_004, 29_004, 9_004], "the frame's missing bytes")
        XCTAssertEqual(frames, [payload])
        XCTAssertEqual(wire.readableBytes, 0)
        XCTAssertNil(cutter.takeGathered(), "the frame was handed on")
        // Put back with nothing read into it, the frame is gathered on from the next read.
        wire.writeLengthPrefixedFrame(payload)
        XCTAssertTrue(cut(wire.readSlice(length: 10)!, with: &cutter).frames.isEmpty)
        cutter.putBack(cutter.takeGathered()!.buffer)
        XCTAssertEqual(cut(wire, with: &cutter).frames, [payload])
    }

    /// Without whole allocation (and above the limit), the buffer holds what arrived, doubling, never the
    /// length announced: four bytes announcing 64 KiB hold a small buffer.
    func testAboveTheLimitTheBufferGrowsWithWhatArrives() {
        var cutter = LengthPrefixedFrameCutter(maxFrameSize: 1 << 20, wholeAllocationLimit: 0)
        XCTAssertTrue(cut(ByteBuffer(bytes: WireFrame.header(announcing: 65_536) + [1, 2]), with: &cutter).frames.isEmpty)
        XCTAssertEqual(cutter.heldCapacity, LengthPrefixedFrameCutter.minimumGather)
        XCTAssertTrue(cut(ByteBuffer(repeating: 7, count: 10_000), with: &cutter).frames.isEmpty)
        XCTAssertGreaterThanOrEqual(cutter.heldCapacity, 10_006)
        XCTAssertLessThanOrEqual(cutter.heldCapacity, 2 * 10_006)
        let frames = cut(ByteBuffer(repeating: 7, count: 65_536 - 10_002), with: &cutter).frames
        XCTAssertEqual(frames.map(\.readableBytes), [65_536])
    }

    /// Frames to be gathered are asked about once, by their head and length, before they are allocated; a
    /// skipped one is dropped as it arrives and the next is read in step; a frame whole within a read is never
    /// asked about, nor one whole once its head is in view.
    func testAdmissionHoldsOrSkipsByTheHead() {
        var wire = ByteBuffer()
        wire.writeLengthPrefixedFrame("skip me, all of me")
        wire.writeLengthPrefixedFrame("hold me")
        wire.writeLengthPrefixedFrame("ok")
        for step in [1, 3, 7, 1000] {
            var cutter = LengthPrefixedFrameCutter(maxFrameSize: 100, admissionHeadSize: 4)
            var asked: [(String, Int)] = []
            var frames: [String] = []
            var rest = wire
            while rest.readableBytes > 0 {
                frames += cut(rest.readSlice(length: min(step, rest.readableBytes))!, with: &cutter) { head, length in
                    asked.append((String(buffer: head), length))
                    return head.readableBytesView.first == UInt8(ascii: "s") ? .skip : .hold
                }.frames.map { String(buffer: $0) }
            }
            if step == 1000 {
                XCTAssertEqual(frames, ["skip me, all of me", "hold me", "ok"])
                XCTAssertTrue(asked.isEmpty, "frames whole within a read are never asked about")
            } else {
                XCTAssertEqual(frames, ["hold me", "ok"], "step \(step)")
                // "ok" is whole once its head is: handed on, never asked about.
                XCTAssertEqual(asked.map(\.0), ["skip", "hold"], "step \(step)")
                XCTAssertEqual(asked.map(\.1), [18, 7], "step \(step)")
            }
        }

        // Nothing is allocated beyond the head before the frame is admitted.
        var cutter = LengthPrefixedFrameCutter(maxFrameSize: 100, admissionHeadSize: 4)
        var read = wire.getSlice(at: 0, length: 10)!
        guard case .admit(let head, 18) = cutter.next(from: &read) else { return XCTFail("the head is asked about") }
        XCTAssertEqual(String(buffer: head), "skip")
        XCTAssertEqual(cutter.heldCapacity, 8)
        cutter.decide(.hold)
        guard case .needMoreData = cutter.next(from: &read) else { return XCTFail("the rest is gathered") }
        XCTAssertGreaterThanOrEqual(cutter.heldCapacity, 22, "held: allocated whole")
    }

    /// A length above the maximum is refused as soon as its four bytes are in view, the frames before it
    /// handed on; from then on, and after `stop()`, nothing is cut.
    func testALengthTooLargeStopsTheCutter() {
        var cutter = LengthPrefixedFrameCutter(maxFrameSize: 4)
        var read = ByteBuffer(lengthPrefixedFrame: "ok")
        read.writeBytes(WireFrame.header(announcing: 5).prefix(3))
        XCTAssertEqual(cut(read, with: &cutter).frames, [ByteBuffer(string: "ok")])
        let refused = cut(ByteBuffer(bytes: [5, 1, 2]), with: &cutter)
        XCTAssertEqual(refused.tooLarge, FrameTooLargeError(announcedLength: 5, maxFrameSize: 4))
        XCTAssertTrue(cutter.isStopped)
        XCTAssertEqual(cutter.heldCapacity, 0)
        var late = ByteBuffer(lengthPrefixedFrame: "late")
        guard case .stopped = cutter.next(from: &late) else { return XCTFail("a stopped cutter cuts nothing") }

        var stopped = LengthPrefixedFrameCutter(maxFrameSize: 100)
        _ = cut(ByteBuffer(bytes: WireFrame.header(announcing: 50) + [1]), with: &stopped)
        stopped.stop()
        XCTAssertEqual(stopped.heldCapacity, 0, "what was held is dropped")
        guard case .stopped = stopped.next(from: &late) else { return XCTFail("a stopped cutter cuts nothing") }
    }
}
