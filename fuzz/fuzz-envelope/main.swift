// libFuzzer harness for JSONRPC's RPCEnvelopeParser: one frame's payload in, an RPCMessage out.
//
// Properties checked on every input:
// - no input traps or misuses memory;
// - a message the parser accepts (a request or a batch) is valid JSON to the tree builder too, and every
//   params and id slice it hands on is itself valid JSON of an allowed kind;
// - a single request agrees with the same text read by the tree builder: its method, params and id are the
//   members the tree holds (the parser reads them from slices without building a tree).
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
    let tree = try? JSONValue(parsing: bytes)
    let validJSON = tree != nil

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
        if case .request(let request) = entry, case .object(let members)? = tree {
            precondition(members["jsonrpc"] == "2.0", "accepted without jsonrpc 2.0")
            precondition(members["method"] == .string(request.method), "method \(request.method) differs from the tree's")
            let params = request.params.flatMap { buffer in buffer.withUnsafeReadableBytes { try? JSONValue(parsing: $0) } }
            precondition(members["params"] == params, "params differ from the tree's")
            precondition(members["id"] == request.id?.value, "id differs from the tree's")
        }
    case .batch(let entries):
        precondition(!entries.isEmpty && entries.count <= parser.maxBatchLength, "batch of \(entries.count)")
        entries.forEach(check)
    case .failure:
        break
    }
    return 0
}

exit(runFuzzer(fuzzEnvelope))
