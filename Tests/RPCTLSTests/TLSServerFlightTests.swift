import NIOCore
import RPCTLS
import XCTest

/// `TLSServerFlight` on server flights built byte by byte as RFC 8446 and RFC 5246 draw them; the real
/// handshakes (BoringSSL's server, OpenSSL's client resuming) are in IntegrationTests' TLSTests.
final class TLSServerFlightTests: XCTestCase {
    /// A ServerHello handshake message with `extensions` (type, data).
    private func serverHello(random: [UInt8] = Array(repeating: 7, count: 32), extensions: [(UInt16, [UInt8])]) -> [UInt8] {
        var body: [UInt8] = [0x03, 0x03] + random + [32] + Array(repeating: 1, count: 32) + [0x13, 0x01, 0x00]
        var list: [UInt8] = []
        for (type, data) in extensions {
            list += [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
        }
        body += [UInt8(list.count >> 8), UInt8(list.count & 0xFF)] + list
        return [2, 0, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    private func record(_ type: UInt8, _ fragment: [UInt8]) -> [UInt8] {
        [type, 0x03, 0x03, UInt8(fragment.count >> 8), UInt8(fragment.count & 0xFF)] + fragment
    }

    private func verdict(_ bytes: [UInt8]) -> TLSServerFlight.Verdict {
        TLSServerFlight.verdict(ByteBuffer(bytes: bytes))
    }

    private let tls13: (UInt16, [UInt8]) = (43, [0x03, 0x04])
    private let keyShare: (UInt16, [UInt8]) = (51, [0x00, 0x1D, 0x00, 0x02, 0xAA, 0xBB])
    private let preSharedKey: (UInt16, [UInt8]) = (41, [0x00, 0x00])

    func testTLS13ResumedWhenTheServerHelloSelectsAPreSharedKey() {
        let encrypted = record(23, Array(repeating: 0, count: 40))
        XCTAssertEqual(verdict(record(22, serverHello(extensions: [tls13, keyShare, preSharedKey])) + encrypted), .resumed)
        XCTAssertEqual(verdict(record(22, serverHello(extensions: [keyShare, tls13])) + encrypted), .full)
    }

    func testAHelloRetryRequestIsNotTheAnswer() {
        let retry: [UInt8] = [
            0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
            0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
        ]
        XCTAssertEqual(verdict(record(22, serverHello(random: retry, extensions: [tls13]))), .helloRetry)
    }

    func testTLS12ResumedWhenNoCertificateFollowsTheServerHello() {
        let hello = serverHello(extensions: [])
        let certificate: [UInt8] = [11, 0, 0, 3, 0, 0, 0]
        let ticket: [UInt8] = [4, 0, 0, 0]
        XCTAssertEqual(verdict(record(22, hello + certificate)), .full, "Certificate in the same record")
        XCTAssertEqual(verdict(record(22, hello) + record(22, certificate)), .full, "Certificate in the next record")
        XCTAssertEqual(verdict(record(22, hello) + record(20, [1])), .resumed, "straight to ChangeCipherSpec")
        XCTAssertEqual(verdict(record(22, hello + ticket) + record(20, [1])), .resumed, "a renewed ticket first")
        XCTAssertEqual(verdict(record(22, hello)), .needMore, "what follows has not been written yet")
    }

    func testPartialAndForeignFlights() {
        let whole = record(22, serverHello(extensions: [tls13, preSharedKey]))
        for cut in [0, 3, 5, whole.count - 1] {
            XCTAssertEqual(verdict(Array(whole.prefix(cut))), .needMore, "cut at \(cut)")
        }
        XCTAssertEqual(verdict(record(21, [2, 40])), .unknown, "an alert")
        XCTAssertEqual(verdict(record(22, [1, 0, 0, 0])), .unknown, "not a ServerHello")
        XCTAssertEqual(verdict(record(22, [2, 0, 0, 10, 3, 3])), .unknown, "a ServerHello cut short inside its record")
    }
}
