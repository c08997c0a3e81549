// libFuzzer harness for RPCConfig: INI syntax (INIDocument.parse) and the schema that turns documents into a
// ServerConfiguration (every value syntax: sizes, time spans, endpoints, booleans, lists, names).
//
// Input layout: the input is split at NUL bytes into up to four documents, applied in order like a main file
// and its drop-ins (so list resets and overrides across files are exercised).
//
// Properties checked on every input: no trap or memory misuse; parsing throws only ConfigError; and a
// configuration that loads renders (`rpcd --check-config`) to text that loads back to an equal configuration.
import FuzzDriver
#if canImport(Glibc)
import Glibc
#endif
import RPCConfig

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    let parts = input.split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false)
    let configuration: ServerConfiguration
    do {
        var documents: [INIDocument] = []
        for (index, part) in parts.enumerated() {
            let text = String(decoding: part, as: UTF8.self)
            documents.append(try INIDocument.parse(text, file: "fuzz-\(index).conf"))
        }
        configuration = try ServerConfiguration(documents: documents)
    } catch {
        return 0  // typed throws: only ConfigError can arrive here
    }
    let rendered = configuration.rendered()
    do {
        let again = try ServerConfiguration(documents: [INIDocument.parse(rendered, file: "rendered.conf")])
        precondition(again == configuration, "rendered configuration loads differently:\n\(rendered)")
    } catch {
        preconditionFailure("rendered configuration does not load: \(error)\n\(rendered)")
    }
    return 0
}

exit(runFuzzer(fuzzConfig))
