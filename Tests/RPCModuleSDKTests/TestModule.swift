import RPCJSON
import RPCModuleSDK

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct PlainError: Error, CustomStringConvertible {
    let description: String
}

/// A module exercising every SDK feature; exported through `RPCModuleExport.entry` like a real one.
struct TestModule: RPCModule {
    static let name = "test-module"
    static let version = "0.1.2"
    static let summary = "Exercises the SDK."

    let context: RPCModuleContext
    let greeting: String

    init(context: RPCModuleContext) throws {
        if let reason = context.config("FailWith") { throw RPCError(code: 0, message: reason) }
        if let reason = context.config("FailPlain") { throw PlainError(description: reason) }
        self.context = context
        greeting = context.config("Greeting") ?? "hello"
        context.logger.info("Test module ready", ["greeting": greeting, "weird-name": "x", "_lead": "y"])
    }

    struct AddParams: Decodable {
        let a: Double
        let b: Double
    }

    struct GreetParams: Decodable {
        let name: String
        let times: Int?
    }

    struct CodeParams: Decodable {
        let code: Int
    }

    struct Point: Decodable {
        let x: Int
        let y: Int
    }

    struct PointParams: Decodable {
        let point: Point
    }

    struct KeyParams: Decodable {
        let key: String
    }

    struct ValueParams: Decodable {
        let value: JSONValue
    }

    struct SleepParams: Decodable {
        let ms: Int
    }

    static var methods: [RPCModuleMethod<TestModule>] {
        [
            .method("add", summary: "Adds.", params: [.number("a"), .number("b")], result: .number("sum")) {
                (_, p: AddParams) in p.a + p.b
            },
            .method(
                "greet",
                params: [.string("name"), .integer("times", minimum: 1, maximum: 3, optional: true, summary: "Repeats.")],
                result: .string("greeting")
            ) { (module, p: GreetParams) in
                Array(repeating: "\(module.greeting) \(p.name)", count: p.times ?? 1).joined(separator: ", ")
            },
            .method("fail", params: [.integer("code")]) { (_, p: CodeParams) -> Bool in
                throw RPCError(code: p.code, message: "Failed on purpose", data: ["code": .number(p.code)])
            },
            .method("crash") { _ -> Bool in
                throw PlainError(description: "disk on fire")
            },
            .method("point", params: [.object("point")]) { (_, p: PointParams) in
                p.point.x + p.point.y
            },
            .method("config", params: [.string("key")]) { (module, p: KeyParams) in
                module.context.config(p.key)
            },
            .method("exact", params: [.any("value")]) { (_, p: ValueParams) in
                p.value
            },
            .method("list", result: .array("items")) { _ in
                ["a", "b"]
            },
            .method("thread", mayBlock: true) { _ in
                currentThreadID()
            },
            // A method that takes time (and can be cancelled while it does): the sleep is the behaviour tested.
            .method("sleep", params: [.integer("ms", minimum: 0)]) { (module, p: SleepParams) in
                do {
                    try await Task.sleep(for: .milliseconds(p.ms))
                } catch {
                    module.context.logger.warning("Sleep cancelled")
                    throw error
                }
                return "done"
            },
            .raw("echo", summary: "Returns params.", params: [.any("anything", optional: true)], result: .any("params")) {
                _, params in
                params
            },
            .raw("product", summary: "Multiplies numbers as Doubles (overflowing to infinity).") { _, params in
                .number((params.arrayValue ?? []).compactMap(\.doubleValue).reduce(1, *))
            },
            .method("square", params: [.number("x")], result: .number("square")) { (_, p: Square) in p.x * p.x },
            // Not async: run as a plain call (SyncBodyTests).
            .method("taskless", result: .boolean("ran")) { _ in true },
        ]
    }
}

struct Square: Decodable, Sendable {
    var x: Double
}

/// A second module type in the same image, with its own init slot, and an event (`EventTests`).
struct OtherModule: RPCModule {
    static let name = "other"
    static let version = "2.0.0"
    static let summary = "Another module in the same image."
    let context: RPCModuleContext
    init(context: RPCModuleContext) { self.context = context }

    struct Announcement: Encodable, Sendable {
        let text: String
        let count: Int
    }

    struct AnnounceParams: Decodable {
        let text: String
    }

    static let announced = RPCModuleEvent<Announcement>(
        "announced", summary: "Something was announced.", schema: ["type": "object", "required": ["text"]])
    static var events: [any RPCModuleEventDeclaration] { [announced] }

    static var methods: [RPCModuleMethod<OtherModule>] {
        [
            .method("whoami") { _ in "other" },
            .method("announce", params: [.string("text")], result: .boolean("sent")) { (module, p: AnnounceParams) in
                module.context.emit(announced, Announcement(text: p.text, count: 1))
            },
        ]
    }
}

/// Everything `RPCModuleExport.problems(of:)` should catch.
struct BadModule: RPCModule {
    static let name = "Bad Name"
    static let version = ""
    static let summary = "Broken on purpose."
    init(context: RPCModuleContext) {}
    struct P: Decodable {}
    static var methods: [RPCModuleMethod<BadModule>] {
        [
            .method("dup") { _ in true },
            .method("dup") { _ in true },
            .method("has space", params: [.string("a-b"), .string("x"), .string("x")]) { (_, _: P) in true },
            .method("_x") { _ in true },
        ]
    }
}

/// An identifier of the calling thread.
func currentThreadID() -> UInt64 {
    #if canImport(Darwin)
    UInt64(UInt(bitPattern: pthread_self()))
    #else
    UInt64(pthread_self())
    #endif
}

/// Distinct module types for filling the image's init slots.
struct Filler<Tag>: RPCModule {
    static var name: String { "filler" }
    static var version: String { "1.0.0" }
    static var summary: String { "Takes a slot." }
    init(context: RPCModuleContext) {}
    static var methods: [RPCModuleMethod<Filler<Tag>>] { [] }
}

enum Tag1 {}
enum Tag2 {}
enum Tag3 {}
enum Tag4 {}
enum Tag5 {}
enum Tag6 {}
enum Tag7 {}
enum Tag8 {}
