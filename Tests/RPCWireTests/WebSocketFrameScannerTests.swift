import RPCTestSupport
import RPCWire
import XCTest

/// `WebSocketFrameScanner` on streams of client frames cut into reads every way: the payloads come out
/// unmasked and the headers untouched.
final class WebSocketFrameScannerTests: XCTestCase {
    /// A stream of frames, and what it must read after the scan.
    private struct Stream {
        var bytes: [UInt8] = []
        var plain: [UInt8] = []

        mutating func append(opcode: UInt8, payload: [UInt8], masked: Bool = true, mask: [UInt8] = WebSocketWire.mask) {
            let header = [0x80 | opcode] + WebSocketWire.lengthBytes(payload.count, masked: masked) + (masked ? mask : [])
            let wire = masked ? payload.enumerated().map { $0.element ^ mask[$0.offset % 4] } : payload
            bytes += header + wire
            plain += header + payload
        }
    }

    private func payload(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) }
    }

    private func frames() -> Stream {
        var stream = Stream()
        stream.append(opcode: 0x1, payload: Array(#"{"jsonrpc":"2.0","method":"rpcd.ping","id":1}"#.utf8))
        stream.append(opcode: 0x1, payload: [])
        stream.append(opcode: 0x9, payload: payload(3, seed: 1), mask: [0xFF, 0x00, 0xA5, 0x5A])
        stream.append(opcode: 0x1, payload: payload(125, seed: 2))
        stream.append(opcode: 0x1, payload: payload(126, seed: 3), mask: [0x01, 0x80, 0x7F, 0xFE])
        stream.append(opcode: 0x2, payload: payload(1000, seed: 4))
        stream.append(opcode: 0x1, payload: payload(9, seed: 5), masked: false)  // refused later, passed untouched
        stream.append(opcode: 0x1, payload: payload(0x1_0003, seed: 6))
        return stream
    }

    /// The stream cut after each of `cuts` (ascending offsets), scanned read by read.
    private func scan(_ stream: Stream, cuts: [Int], file: StaticString = #filePath, line: UInt = #line) {
        var scanner = WebSocketFrameScanner()
        var bytes = stream.bytes
        var start = 0
        for end in cuts + [bytes.count] where end > start {
            bytes.withUnsafeMutableBytes { scanner.scan(unmaskingIn: UnsafeMutableRawBufferPointer(rebasing: $0[start..<end])) }
            start = end
        }
        XCTAssertTrue(bytes == stream.plain, "the payloads unmasked, the rest untouched", file: file, line: line)
    }

    func testOneRead() {
        scan(frames(), cuts: [])
    }

    func testByteByByte() {
        let stream = frames()
        scan(stream, cuts: Array(1..<stream.bytes.count))
    }

    /// Reads of every size from 2 to 17 bytes, so that a cut falls at every offset of every header and of
    /// the 8-byte steps of the unmasking.
    func testReadsOfEverySize() {
        let stream = frames()
        for size in 2...17 {
            scan(stream, cuts: Array(stride(from: size, to: stream.bytes.count, by: size)))
        }
    }
}
