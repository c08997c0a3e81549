package import NIOCore
import RPCJSON
package import RPCProtocol

/// Serializes JSON-RPC 2.0 response objects straight into a `ByteBuffer`.
///
/// Results arrive as raw JSON bytes from handlers and ids as the raw bytes of the request, so a reply is a
/// few `memcpy`s: nothing is decoded or re-encoded. This is the only place an `RPCError` becomes JSON.
package enum RPCReplyWriter {
    /// What `writeResult` adds to the result and the id: `{"jsonrpc":"2.0","result":` `,"id":` `}`.
    package static let resultOverhead = 33

    /// The text before a result, and between it and the id.
    private static let resultHead: StaticString = #"{"jsonrpc":"2.0","result":"#
    private static let idMember: StaticString = #","id":"#

    /// `{"jsonrpc":"2.0","result":RESULT,"id":ID}`; `result` must be valid JSON.
    package static func writeResult(_ result: ByteBuffer, id: RPCID, into buffer: inout ByteBuffer) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: resultLength(result, id: id)) {
            writeResult(result, id: id, to: $0)
        }
    }

    /// The length of the result reply `writeResult` writes, known before it is written.
    package static func resultLength(_ result: ByteBuffer, id: RPCID) -> Int {
        resultOverhead + result.readableBytes + id.rawJSON.readableBytes
    }

    /// `writeResult(_:id:into:)` into `memory`, which has room for it (`resultOverhead` and the result's and
    /// the id's bytes); the bytes written. One pass of copies: each of `ByteBuffer`'s own writes checks the
    /// buffer's uniqueness and room and its storage's exclusive access, five times per reply.
    package static func writeResult(_ result: ByteBuffer, id: RPCID, to memory: UnsafeMutableRawBufferPointer) -> Int {
        var offset = copy(resultHead, to: memory, at: 0)
        offset += result.withUnsafeReadableBytes { copy($0, to: memory, at: offset) }
        offset += copy(idMember, to: memory, at: offset)
        offset += id.rawJSON.withUnsafeReadableBytes { copy($0, to: memory, at: offset) }
        precondition(offset < memory.count, "RPCReplyWriter: the reply outgrew the room made for it")
        memory[offset] = UInt8(ascii: "}")
        return offset + 1
    }

    /// What comes before a result in `writeResult`'s reply: `{"jsonrpc":"2.0","result":`. With
    /// `writeResultTail`, a large result is written as its own buffer between the two, not copied.
    package static func writeResultHead(into buffer: inout ByteBuffer) {
        buffer.writeStaticString(resultHead)
    }

    /// What comes after a result in `writeResult`'s reply: `,"id":ID}`.
    package static func writeResultTail(id: RPCID, into buffer: inout ByteBuffer) {
        buffer.writeStaticString(idMember)
        buffer.writeImmutableBuffer(id.rawJSON)
        buffer.writeInteger(UInt8(ascii: "}"))
    }

    private static func copy(_ text: StaticString, to memory: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        copy(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount), to: memory, at: offset)
    }

    private static func copy(_ bytes: UnsafeRawBufferPointer, to memory: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        precondition(offset + bytes.count <= memory.count, "RPCReplyWriter: the reply outgrew the room made for it")
        if let base = bytes.baseAddress { (memory.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count) }
        return bytes.count
    }

    /// `{"jsonrpc":"2.0","error":{"code":C,"message":M[,"data":D]},"id":ID}`; a nil id is written as `null`.
    package static func writeError(_ error: RPCError, id: RPCID?, into buffer: inout ByteBuffer) {
        var object: [UInt8] = []
        object.reserveCapacity(96)
        appendStatic(#"{"jsonrpc":"2.0","error":{"code":"#, to: &object)
        object.append(contentsOf: String(error.code).utf8)
        appendStatic(#","message":"#, to: &object)
        JSONString.appendQuoted(error.message, to: &object)
        if let data = error.data {
            appendStatic(#","data":"#, to: &object)
            data.append(to: &object)
        }
        appendStatic(#"},"id":"#, to: &object)
        buffer.writeBytes(object)
        buffer.writeImmutableBuffer((id ?? .null).rawJSON)
        buffer.writeInteger(UInt8(ascii: "}"))
    }

    /// Joins already serialized replies into one batch reply array.
    package static func writeBatch(_ replies: some Sequence<ByteBuffer>, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "["))
        var first = true
        for reply in replies {
            if !first { buffer.writeInteger(UInt8(ascii: ",")) }
            first = false
            buffer.writeImmutableBuffer(reply)
        }
        buffer.writeInteger(UInt8(ascii: "]"))
    }

    private static func appendStatic(_ text: StaticString, to bytes: inout [UInt8]) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
}
