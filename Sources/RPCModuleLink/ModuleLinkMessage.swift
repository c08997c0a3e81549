package import NIOCore
import RPCJSON
import RPCWire

/// One message on the link between rpcd and a module host process (`ModuleLinkCodec` frames it,
/// `ModuleLinkFrameReceiver` cuts the frames apart).
///
/// Each message is one length-prefixed frame, as on rpcd's own sockets (RPCWire), whose payload starts with
/// its kind:
///
///     +----------------+------+---------------------------------------------+
///     | length (u32 BE)| kind | body (big-endian integers, u32-prefixed text) |
///     +----------------+------+---------------------------------------------+
///
///     rpcd -> host: start(JSON)  call(token u64, method u32, params?)  cancel(token)  ping(seq u64)
///     host -> rpcd: ready(JSON)  startFailed(text)  result(token, JSON)  error(token, code i64, message, data?)
///                   log(level u8, message, fields)  emit(event, JSON)  pong(seq)
///
/// JSON travels as the bytes the module gave (results, payloads) or rpcd received (params): never re-encoded.
/// Tokens are rpcd's own numbers for calls in flight on this link; the host maps them to the `rpcd_call *`
/// handles its module sees.
package enum ModuleLinkMessage: Equatable, Sendable {
    /// What to load and how to initialise it (`ModuleHostStart`).
    case start(ByteBuffer)
    /// The module's descriptor (`RPCServiceDescriptor+Link`): the host serves from now on.
    case ready(ByteBuffer)
    /// Why the module could not be loaded or initialised; the host exits after it.
    case startFailed(String)
    /// `params` is nil when the caller sent none.
    case call(token: UInt64, method: UInt32, params: ByteBuffer?)
    case cancel(token: UInt64)
    case result(token: UInt64, json: ByteBuffer)
    /// `data` is nil without data (JSON otherwise, checked by rpcd).
    case error(token: UInt64, code: Int64, message: String, data: ByteBuffer?)
    /// A log entry of the module (or of the host about it): syslog `level`, constant message, fields.
    case log(level: UInt8, message: String, fields: [LogEntryField])
    /// An event as the module emitted it: its full name (`kv.changed`) and payload.
    case emit(event: String, payload: ByteBuffer)
    case ping(UInt64)
    case pong(UInt64)

    /// The bytes a `call` frame takes besides its params: the length, the kind, the token, the method and
    /// whether params follow. What rpcd charges a call for crossing the link is this plus the params.
    package static let callFrameOverhead = LengthPrefixedFrameDecoder.headerSize + 1 + 8 + 4 + 1

    package struct LogEntryField: Equatable, Sendable {
        package var name: String
        package var value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The bytes of a frame's payload that `answerToken(head:)` reads: the kind and a token.
    package static let answerHeadSize = 1 + 8

    /// The token of the call a frame answers (`result`, `error`), from its payload's first `answerHeadSize`
    /// bytes; nil for a frame of another kind, or a head cut short.
    package static func answerToken(head: ByteBuffer) -> UInt64? {
        guard let byte = head.getInteger(at: head.readerIndex, as: UInt8.self),
              byte == Kind.result.rawValue || byte == Kind.error.rawValue else { return nil }
        return head.getInteger(at: head.readerIndex + 1, as: UInt64.self)
    }

    private enum Kind: UInt8 {
        case start = 1, ready, startFailed, call, cancel, result, error, log, emit, ping, pong
    }

    /// Appends the payload of this message's frame (without the length prefix) to `buffer`.
    package func write(to buffer: inout ByteBuffer) {
        writeHead(to: &buffer)
        if let tail { buffer.writeImmutableBuffer(tail) }
    }

    /// The bytes that end this message's frame as they are, after its head: the JSON a `start`, `ready`,
    /// `result` or `emit` carries, a call's params, an error's data. The only part that may be large, so that
    /// `ModuleLinkCodec` can write it without copying it.
    package var tail: ByteBuffer? {
        switch self {
        case .start(let json), .ready(let json), .result(_, let json): json
        case .call(_, _, let params): params
        case .error(_, _, _, let data): data
        case .emit(_, let payload): payload
        case .startFailed, .cancel, .log, .ping, .pong: nil
        }
    }

    /// Appends the payload of this message's frame up to its `tail`.
    package func writeHead(to buffer: inout ByteBuffer) {
        switch self {
        case .start:
            buffer.writeInteger(Kind.start.rawValue)
        case .ready:
            buffer.writeInteger(Kind.ready.rawValue)
        case .startFailed(let reason):
            buffer.writeInteger(Kind.startFailed.rawValue)
            buffer.writeString(reason)
        // The fixed fields of a message stored in place, in one reservation: calls and answers are most of a
        // link's messages, and ByteBuffer's integer writes copy each through a generic path.
        case .call(let token, let method, let params):
            Self.writeFixed(.call, token, to: &buffer, extra: 5) { bytes in
                bytes.storeBytes(of: method.bigEndian, toByteOffset: 9, as: UInt32.self)
                bytes.storeBytes(of: params == nil ? 0 : 1, toByteOffset: 13, as: UInt8.self)
            }
        case .cancel(let token):
            Self.writeFixed(.cancel, token, to: &buffer)
        case .result(let token, _):
            Self.writeFixed(.result, token, to: &buffer)
        case .error(let token, let code, let message, _):
            Self.writeFixed(.error, token, to: &buffer, extra: 8) { bytes in
                bytes.storeBytes(of: code.bigEndian, toByteOffset: 9, as: Int64.self)
            }
            Self.writeText(message, to: &buffer)
        case .log(let level, let message, let fields):
            buffer.writeInteger(Kind.log.rawValue)
            buffer.writeInteger(level)
            Self.writeText(message, to: &buffer)
            buffer.writeInteger(UInt32(fields.count))
            for field in fields {
                Self.writeText(field.name, to: &buffer)
                Self.writeText(field.value, to: &buffer)
            }
        case .emit(let event, _):
            buffer.writeInteger(Kind.emit.rawValue)
            Self.writeText(event, to: &buffer)
        case .ping(let sequence):
            buffer.writeMultipleIntegers(Kind.ping.rawValue, sequence)
        case .pong(let sequence):
            buffer.writeMultipleIntegers(Kind.pong.rawValue, sequence)
        }
    }

    /// Reads one message from a whole frame's payload. Throws on anything else (an unknown kind, a body cut
    /// short, bytes left over): the peer is broken, and the link is closed.
    package init(frame: ByteBuffer) throws(ModuleLinkError) {
        var frame = frame
        guard let byte = frame.readInteger(as: UInt8.self), let kind = Kind(rawValue: byte) else {
            throw ModuleLinkError("unknown message kind")
        }
        switch kind {
        case .start:
            self = .start(frame)
            return
        case .ready:
            self = .ready(frame)
            return
        case .startFailed:
            self = .startFailed(String(buffer: frame))
            return
        case .call:
            guard let (token, method, hasParams) = frame.readMultipleIntegers(as: (UInt64, UInt32, UInt8).self),
                  hasParams <= 1 else {
                throw ModuleLinkError("call cut short")
            }
            guard hasParams == 1 || frame.readableBytes == 0 else { throw ModuleLinkError("call has bytes left over") }
            self = .call(token: token, method: method, params: hasParams == 1 ? frame : nil)
            return
        case .cancel:
            guard let token = frame.readInteger(as: UInt64.self) else { throw ModuleLinkError("cancel cut short") }
            self = .cancel(token: token)
        case .result:
            guard let token = frame.readInteger(as: UInt64.self) else { throw ModuleLinkError("result cut short") }
            self = .result(token: token, json: frame)
            return
        case .error:
            guard let (token, code) = frame.readMultipleIntegers(as: (UInt64, Int64).self),
                  let message = Self.readText(&frame) else {
                throw ModuleLinkError("error cut short")
            }
            self = .error(token: token, code: code, message: message, data: frame.readableBytes == 0 ? nil : frame)
            return
        case .log:
            guard let level = frame.readInteger(as: UInt8.self), let message = Self.readText(&frame),
                  let count = frame.readInteger(as: UInt32.self) else {
                throw ModuleLinkError("log cut short")
            }
            var fields: [LogEntryField] = []
            for _ in 0..<count {
                guard let name = Self.readText(&frame), let value = Self.readText(&frame) else {
                    throw ModuleLinkError("log field cut short")
                }
                fields.append(LogEntryField(name: name, value: value))
            }
            self = .log(level: level, message: message, fields: fields)
        case .emit:
            guard let event = Self.readText(&frame) else { throw ModuleLinkError("emit cut short") }
            self = .emit(event: event, payload: frame)
            return
        case .ping:
            guard let sequence = frame.readInteger(as: UInt64.self) else { throw ModuleLinkError("ping cut short") }
            self = .ping(sequence)
        case .pong:
            guard let sequence = frame.readInteger(as: UInt64.self) else { throw ModuleLinkError("pong cut short") }
            self = .pong(sequence)
        }
        guard frame.readableBytes == 0 else { throw ModuleLinkError("message has bytes left over") }
    }

    /// Appends `kind` and `token` (big-endian, as `readMultipleIntegers` reads them), then the `extra` bytes
    /// `rest` stores at offset 9 on, in one reservation of the buffer.
    private static func writeFixed(
        _ kind: Kind, _ token: UInt64, to buffer: inout ByteBuffer, extra: Int = 0,
        _ rest: (UnsafeMutableRawBufferPointer) -> Void = { _ in }
    ) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 9 + extra) { bytes in
            bytes.storeBytes(of: kind.rawValue, as: UInt8.self)
            bytes.storeBytes(of: token.bigEndian, toByteOffset: 1, as: UInt64.self)
            rest(bytes)
            return 9 + extra
        }
    }

    private static func writeText(_ text: String, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt32(text.utf8.count))
        buffer.writeString(text)
    }

    private static func readText(_ buffer: inout ByteBuffer) -> String? {
        guard let length = buffer.readInteger(as: UInt32.self) else { return nil }
        return buffer.readString(length: Int(length))
    }
}
