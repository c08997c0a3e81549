// libFuzzer harness for RPCJSON: the scanner, the tree builder, string decoding and serialization.
//
// Properties checked on every input (a violation traps, which libFuzzer reports as a crash):
// - no input traps, overflows the stack or touches memory it should not (AddressSanitizer);
// - the scanner and the tree builder agree on what is valid JSON;
// - a parsed value, serialized and parsed again, is the same value.
import FuzzDriver
#if canImport(Glibc)
import Glibc
#endif
import RPCJSON

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // A small depth limit, so the fuzzer reaches the `.tooDeep` path with short inputs.
    let maxDepth = 16

    var scanner = JSONScanner(bytes: bytes, maxDepth: maxDepth)
    var scannerAccepted = true
    do {
        _ = try scanner.scanValue(depth: 0)
        try scanner.expectEnd()
    } catch {
        scannerAccepted = false
    }

    let parsed: JSONValue
    do {
        parsed = try JSONValue(parsing: bytes, maxDepth: maxDepth)
    } catch {
        precondition(!scannerAccepted, "the scanner accepted what the tree builder refused: \(error)")
        return 0
    }
    precondition(scannerAccepted, "the tree builder accepted what the scanner refused")

    let text = parsed.serialized()
    let again: JSONValue
    do {
        again = try JSONValue(parsing: text, maxDepth: maxDepth)
    } catch {
        preconditionFailure("serialized output does not parse: \(error): \(String(decoding: text, as: UTF8.self))")
    }
    precondition(again == parsed, "round trip changed the value: \(String(decoding: text, as: UTF8.self))")
    _ = parsed.prettyPrinted()
    return 0
}

exit(runFuzzer(fuzzJSON))
