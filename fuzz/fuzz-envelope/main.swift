// libFuzzer harness for JSONRPC's RPCEnvelopeParser: one frame's payload in, an RPCMessage out.
//
// Properties checked on every input:
// - no input traps or misuses memory;
// - a message the parser accepts (a request or a batch) is valid JSON to the tree builder too, and every
//   params and id slice it hands on is itself valid JSON of an allowed kind;
// - a message the tree builder refuses for its syntax is answered with a failure or only invalid entries.
import FuzzDriver
#if canImport(Glibc)
import Glibc
#endif
import JSONRPC
import NIOCore
import RPCJSON

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzEnvelope(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // Small limits reach the depth and batch-length paths with short inputs.
    let parser = RPCEnvelopeParser(maxNestingDepth: 8, maxBatchLength: 8)
    // A slice at a non-zero reader index, as the frame decoder delivers them.
    var buffer = ByteBuffer()
    buffer.writeString("pad")
    buffer.writeBytes(bytes)
    buffer.moveReaderIndex(forwardBy: 3)

    let message = parser.parse(buffer)
    // Validity with a generous depth: the parser's own depth limit is not what this compares.
    let validJSON = (try? JSONValue(parsing: bytes)) != nil

    func check(_ entry: RPCEntry) {
        switch entry {
        case .request(let request):
            precondition(validJSON, "a request was accepted from invalid JSON")
            if let params = request.params {
                let value = params.withUnsafeReadableBytes { try? JSONValue(parsing: $0) }
                switch value {
                case .array?, .object?: break
                default: preconditionFailure("params slice is not an array or an object: \(String(buffer: params))")
                }
            }
            if let id = request.id { checkID(id) }
        case .invalid(let id, _):
            if let id { checkID(id) }
        }
    }
    func checkID(_ id: RPCID) {
        let value = id.rawJSON.withUnsafeReadableBytes { try? JSONValue(parsing: $0) }
        switch value {
        case .string?, .number?, .null?: break
        default: preconditionFailure("id slice is not a string, a number or null: \(id)")
        }
    }

    switch message {
    case .single(let entry):
        check(entry)
    case .batch(let entries):
        precondition(!entries.isEmpty && entries.count <= parser.maxBatchLength, "batch of \(entries.count)")
        entries.forEach(check)
    case .failure:
        break
    }
    return 0
}

exit(runFuzzer(fuzzEnvelope))
