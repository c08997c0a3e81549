package import NIOCore

/// Whether a TLS handshake resumed a session, read from the server's own first flight, as it goes out.
///
/// swift-nio-ssl resumes sessions (BoringSSL issues TLS 1.3 tickets and accepts them, with keys of its own
/// per context) but does not say whether a connection resumed one. The server's first flight says it in
/// plain text: its ServerHello, and for TLS 1.2 what follows it.
///
///     record:      type (1) | version (2) | length (2) | fragment
///     handshake:   msg_type (1) | length (3) | body              (msg_type 2: ServerHello)
///     ServerHello: legacy_version (2) | random (32) | session_id (1 + n) | cipher_suite (2) | compression (1)
///                  | extensions (2 + n): type (2) | length (2) | data
///
/// - TLS 1.3 (`supported_versions`, 43, says 0x0304): resumed when the ServerHello carries `pre_shared_key`
///   (41), the ticket the server accepted. A HelloRetryRequest (a ServerHello with RFC 8446's fixed random)
///   is not the answer yet: the next flight is.
/// - TLS 1.2: resumed when the ServerHello is followed by a NewSessionTicket (4) or the ChangeCipherSpec record
///   (20) rather than the certificate and key exchange of a full handshake (11, 12, 13, 14).
///
/// Anything else (an alert, a flight this does not understand) is `unknown`, never a guess.
package enum TLSServerFlight {
    package enum Verdict: Hashable, Sendable {
        case resumed
        case full
        /// A HelloRetryRequest: the verdict is in the server's next flight.
        case helloRetry
        /// The flight so far is not enough to tell: more of it is on its way.
        case needMore
        case unknown
    }

    /// The verdict on `flight`, the bytes the server has written so far since its handshake began.
    package static func verdict(_ flight: ByteBuffer) -> Verdict {
        var records = flight
        guard let (type, fragment) = readRecord(&records) else { return .needMore }
        guard type == handshakeRecord else { return .unknown }
        var messages = fragment
        guard let messageType = messages.readInteger(as: UInt8.self), messageType == serverHello,
            let length = readLength24(&messages), var hello = messages.readSlice(length: length)
        else { return .unknown }
        guard hello.readInteger(as: UInt16.self) != nil, let random = hello.readBytes(length: 32),
            let sessionIDLength = hello.readInteger(as: UInt8.self), hello.readSlice(length: Int(sessionIDLength)) != nil,
            hello.readInteger(as: UInt16.self) != nil, hello.readInteger(as: UInt8.self) != nil
        else { return .unknown }
        if random == helloRetryRandom { return .helloRetry }
        var extensions = Set<UInt16>()
        var isTLS13 = false
        if let extensionsLength = hello.readInteger(as: UInt16.self), var list = hello.readSlice(length: Int(extensionsLength)) {
            while let type = list.readInteger(as: UInt16.self), let length = list.readInteger(as: UInt16.self),
                let data = list.readSlice(length: Int(length)) {
                extensions.insert(type)
                if type == supportedVersions, data.getInteger(at: data.readerIndex, as: UInt16.self) == 0x0304 { isTLS13 = true }
            }
        }
        if isTLS13 { return extensions.contains(preSharedKey) ? .resumed : .full }
        // TLS 1.2: the next handshake message, in this record or the next, or a ChangeCipherSpec record.
        if let next = messages.readInteger(as: UInt8.self) { return verdictOnTLS12(nextMessage: next) }
        guard let (nextType, nextFragment) = readRecord(&records) else { return .needMore }
        if nextType == changeCipherSpecRecord { return .resumed }
        guard nextType == handshakeRecord, let next = nextFragment.getInteger(at: nextFragment.readerIndex, as: UInt8.self)
        else { return .unknown }
        return verdictOnTLS12(nextMessage: next)
    }

    private static func verdictOnTLS12(nextMessage: UInt8) -> Verdict {
        switch nextMessage {
        case 4: .resumed  // NewSessionTicket: an abbreviated handshake renewing the client's ticket
        case 11, 12, 13, 14: .full  // Certificate, ServerKeyExchange, CertificateRequest, ServerHelloDone
        default: .unknown
        }
    }

    /// The next whole record of `buffer`; nil while it has not all arrived.
    private static func readRecord(_ buffer: inout ByteBuffer) -> (type: UInt8, fragment: ByteBuffer)? {
        guard buffer.readableBytes >= 5, let type = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
            let length = buffer.getInteger(at: buffer.readerIndex + 3, as: UInt16.self),
            buffer.readableBytes >= 5 + Int(length)
        else { return nil }
        buffer.moveReaderIndex(forwardBy: 5)
        return (type, buffer.readSlice(length: Int(length))!)
    }

    private static func readLength24(_ buffer: inout ByteBuffer) -> Int? {
        guard let high = buffer.readInteger(as: UInt8.self), let low = buffer.readInteger(as: UInt16.self) else { return nil }
        return Int(high) << 16 | Int(low)
    }

    private static let handshakeRecord: UInt8 = 22
    private static let changeCipherSpecRecord: UInt8 = 20
    private static let serverHello: UInt8 = 2
    private static let supportedVersions: UInt16 = 43
    private static let preSharedKey: UInt16 = 41
    /// RFC 8446 §4.1.3: the random of a ServerHello that is a HelloRetryRequest.
    private static let helloRetryRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]
}
