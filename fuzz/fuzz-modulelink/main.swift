// libFuzzer harness for the module link (RPCModuleLink): what a module host process sends rpcd. A host runs
// a module rpcd does not trust, so everything it writes is hostile input, read by `ModuleLinkMessage(frame:)`
// and, for `ready`, by `RPCServiceDescriptor(linkBuffer:)`.
//
// Properties checked on every input:
// - no input traps or misuses memory;
// - a frame read as a message writes back to a frame that reads as the same message, and that frame writes
//   back byte for byte (text fields are repaired UTF-8 once, then stable);
// - the same bytes cut into reads of random sizes through the codec's pipeline give the same message, or the
//   same refusal;
// - a `ready` body that reads as a descriptor writes (`linkJSON`) back to the same JSON, which reads as the same
//   descriptor: the reader refuses what it would not write.
import FuzzDriver
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOEmbedded
import RPCBinding
import RPCJSON
import RPCModuleLink

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzModuleLink(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // Byte 0 seeds how the framed stream is cut into reads; the rest is one frame's payload.
    let cutSeed = bytes[0]
    let payload = ByteBuffer(bytes: bytes.dropFirst())

    let direct = try? ModuleLinkMessage(frame: payload)
    if let message = direct {
        var again = ByteBuffer()
        message.write(to: &again)
        guard let reread = try? ModuleLinkMessage(frame: again) else {
            preconditionFailure("a message rpcd read does not read back after writing: \(message)")
        }
        precondition(reread == message, "message changed on a second trip: \(message) -> \(reread)")
        var third = ByteBuffer()
        reread.write(to: &third)
        precondition(third == again, "writing is not stable after one trip")
        if case .ready(let json) = message { checkDescriptor(json) }
    }

    // The codec's pipeline, as rpcd runs it, fed the framed payload in reads of 1...16 bytes.
    let channel = EmbeddedChannel()
    try! channel.pipeline.syncOperations.addHandlers(ModuleLinkCodec.handlers())
    var stream = ByteBuffer()
    stream.writeInteger(UInt32(payload.readableBytes))
    stream.writeImmutableBuffer(payload)
    var state = UInt32(cutSeed) &+ 1
    var refused = false
    while stream.readableBytes > 0 && !refused {
        state = state &* 1_103_515_245 &+ 12_345
        let take = min(stream.readableBytes, Int((state >> 16) % 16) + 1)
        do { try channel.writeInbound(stream.readSlice(length: take)!) } catch { refused = true }
    }
    // The codec hands on each read's messages as one array, at the read's end.
    var piped: [ModuleLinkMessage] = []
    while let messages = try? channel.readInbound(as: [ModuleLinkMessage].self) { piped += messages }
    precondition(refused == (direct == nil), "the codec and the decoder disagree on whether this is a message")
    precondition(piped == (direct.map { [$0] } ?? []), "the codec delivered a different message")
    _ = try? channel.finish()
    return 0
}

private func checkDescriptor(_ json: ByteBuffer) {
    guard let descriptor = try? RPCServiceDescriptor(linkBuffer: json) else { return }
    precondition(descriptor.linkJSON == JSONValue(linkBuffer: json), "a descriptor rpcd accepted does not write back to the JSON it was read from")
    let reread: RPCServiceDescriptor
    do {
        reread = try RPCServiceDescriptor(linkJSON: descriptor.linkJSON)
    } catch {
        preconditionFailure("a descriptor rpcd accepted does not read back after writing: \(error)")
    }
    precondition(reread == descriptor, "the descriptor changed on a trip through linkJSON")
}

exit(runFuzzer(fuzzModuleLink))
