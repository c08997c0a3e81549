import RPCModuleSDK

/// `trapping`: a Swift module whose `trap` method fails a force unwrap, for the fault isolation tests
/// (Tests/IntegrationTests, IsolationTests): a Swift trap must be contained like a C crash. Never install it.
struct Trapping: RPCModule {
    static let name = "trapping"
    static let version = "1.0.0"
    static let summary = "Traps on request, for the fault isolation tests."

    init(context: RPCModuleContext) {}

    static var methods: [RPCModuleMethod<Trapping>] {
        [
            .rawJSON("ok", summary: "Answers its params.", result: .any("params"), readOnly: true) { _, params in
                params
            },
            .rawJSON("trap", summary: "Unwraps nil.", result: .any("never"), readOnly: true) { _, params in
                let nothing: RPCRawJSON? = params.bytes.count < 0 ? params : nil
                return nothing!
            },
        ]
    }
}

@_cdecl("rpcd_module_entry_v1")
public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(Trapping.self) }
