import RPCModuleSDK

/// `echo`: answers with what it is given, and waits on request — for trying out clients, concurrency and
/// timeouts.
struct Echo: RPCModule {
    static let name = "echo"
    static let version = "1.0.0"
    static let summary = "Returns its params unchanged, or answers after a delay."

    init(context: RPCModuleContext) {}

    struct SleepParams: Decodable {
        let ms: Int
    }

    static var methods: [RPCModuleMethod<Echo>] {
        [
            // Handed through as text: an echo has no reason to decode what it returns unchanged.
            .rawJSON(
                "echo", summary: "Returns the params exactly as sent (null when there are none).",
                result: .any("params"), readOnly: true
            ) { _, params in
                params
            },
            .method(
                "sleep", summary: "Waits ms milliseconds without blocking a thread, then returns \"done\".",
                params: [.integer("ms", minimum: 0, maximum: 60_000, summary: "How long to wait, 0 to 60000.")],
                result: .string("done"), readOnly: true
            ) { (_, params: SleepParams) in
                try await Task.sleep(for: .milliseconds(params.ms))
                return "done"
            },
        ]
    }
}

@_cdecl("rpcd_module_entry_v1")
public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(Echo.self) }
