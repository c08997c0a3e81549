import RPCModuleSDK

/// Serves `hello.greet(name)`: "Hello, NAME!". `[Config]` `Greeting=` replaces "Hello".
struct Hello: RPCModule {
    static let name = "hello"
    static let version = "1.0.0"
    static let summary = "Greets whoever asks."
    /// The `[Config]` keys it reads: rpcd refuses a handler with any other (a typo), naming it.
    static let configKeys: [String]? = ["Greeting"]

    let greeting: String

    init(context: RPCModuleContext) throws {
        greeting = context.config("Greeting") ?? "Hello"
        guard !greeting.isEmpty else { throw RPCError(code: 0, message: "Greeting= must not be empty") }
    }

    struct GreetParams: Decodable {
        let name: String?
    }

    static var methods: [RPCModuleMethod<Hello>] {
        [
            .method(
                "greet", summary: "Returns a greeting for name.",
                params: [.string("name", optional: true, summary: "Whom to greet (default: world).")],
                result: .string("greeting"), readOnly: true
            ) { (hello, params: GreetParams) in
                "\(hello.greeting), \(params.name ?? "world")!"
            }
        ]
    }
}

@_cdecl("rpcd_module_entry_v1")
public func rpcdModuleEntry() -> UnsafeRawPointer { RPCModuleExport.entry(Hello.self) }
