import RPCExampleInterfaces
import RPCMacros
import RPCModuleSDK
import Synchronization
import XCTest

/// A small interface of the tests' own, declared once and used for both sides below.
///
/// The rest of this comment is not the summary.
@RPCInterface(service: "greeter")
protocol Greeter: Sendable {
    /// Greets someone.
    @RPCMethod(result: "greeting", readOnly: true, errors: [Unwelcome.self])
    func greet(name: String, times: Int?) async throws -> String

    /// Remembers a name; returns how many it knows.
    @RPCMethod(result: "count", mayBlock: true)
    func remember(_ name: String) async throws -> Int

    /// Forgets everything.
    func forget() async throws
}

/// An interface with an event, implemented by a module that does not say it again.
@RPCInterface(service: "ticker", events: [TickerEvents.tick])
protocol Ticker: Sendable {
    func start() async throws
}

enum TickerEvents {
    static let tick = RPCEventDescriptor(name: "tick", summary: "A tick.", schema: ["type": "integer"])
}

struct TickerModule: Ticker, RPCInterfaceModule {
    static let version = "1.0.0"
    init(context: RPCModuleContext) {}
    func start() async throws {}
}

/// The same, re-declaring an event the interface does not have.
struct MisdeclaredTickerModule: Ticker, RPCInterfaceModule {
    static let version = "1.0.0"
    static var events: [any RPCModuleEventDeclaration] { [RPCModuleEvent<Int>("tock")] }
    init(context: RPCModuleContext) {}
    func start() async throws {}
}

struct Unwelcome: RPCDocumentedError, Equatable {
    static let code = 7
    static let message = "Unwelcome"
    var name: String
    var reasons: [String]
}

struct GreeterModule: Greeter, RPCInterfaceModule {
    static let version = "2.0.0"
    let names = Names()

    final class Names: Sendable {
        let list = Mutex<[String]>([])
    }

    init(context: RPCModuleContext) {}

    func greet(name: String, times: Int?) async throws -> String {
        if name == "Mallory" { throw Unwelcome(name: name, reasons: ["listens in"]) }
        if name == "Eve" { throw RPCError(code: 8, message: "Undocumented", data: ["who": "Eve"]) }
        return Array(repeating: "Hello, \(name)!", count: times ?? 1).joined(separator: " ")
    }

    func remember(_ name: String) async throws -> Int {
        names.list.withLock { names in
            names.append(name)
            return names.count
        }
    }

    func forget() async throws {
        names.list.withLock { $0.removeAll() }
    }
}

/// The same interface, implemented without suspending: each call runs without a task.
struct SyncGreeterModule: SyncGreeter, RPCInterfaceModule {
    static let version = "2.0.0"

    init(context: RPCModuleContext) {}

    func greet(name: String, times: Int?) throws -> String {
        if name == "Mallory" { throw Unwelcome(name: name, reasons: []) }
        return "Hi, \(name)!"
    }

    func remember(_ name: String) throws -> Int { 1 }

    func forget() throws {}
}

/// The same service as `Greeter`, one version on: `greet` has a new required parameter. Its fingerprint differs,
/// so a proxy of either refuses a server of the other.
@RPCInterface(service: "greeter")
protocol GreeterV2 {
    func greet(name: String, times: Int?, language: String) async throws -> String
    func remember(_ name: String) async throws -> Int
    func forget() async throws
}

/// A proxy and a module made from one protocol, meeting in-process: the proxy's calls go through rpcd's binding
/// (`ParamsBinding`, via the SDK), and its fingerprint check reads rpcd's own `rpc.discover` document.
final class ProxyAndModuleTests: XCTestCase {
    /// A module implementing an interface carries the interface's events without declaring them again (issue 28):
    /// what it exports is the declaration, so its emit is accepted and its fingerprint is a proxy's.
    func testAnInterfaceModuleCarriesTheInterfacesEvents() {
        XCTAssertEqual(TickerModule.events.map(\.name), ["tick"])
        XCTAssertEqual(TickerModule.events.first?.schema, ["type": "integer"])
        XCTAssertEqual(TickerModule.events.first?.summary, "A tick.")
        XCTAssertEqual(RPCModuleExport.problems(of: TickerModule.self), [])
        XCTAssertEqual(
            RPCModuleExport.problems(of: MisdeclaredTickerModule.self),
            ["events differ from interface 'ticker''s: leave `events` out, the interface's declaration is the module's"])
    }

    let module = GreeterModule(context: RPCModuleContext())

    func testProxyCallsTheModuleByName() async throws {
        let greeter = try await GreeterProxy.connect(ModuleTransport().serving(module))
        let greeting = try await greeter.greet(name: "Ann", times: 2)
        XCTAssertEqual(greeting, "Hello, Ann! Hello, Ann!")
        let once = try await greeter.greet(name: "Bob", times: nil)
        XCTAssertEqual(once, "Hello, Bob!", "an absent optional is left out, and the module gets nil")
        let first = try await greeter.remember("Ann")
        let second = try await greeter.remember("Bob")
        XCTAssertEqual([first, second], [1, 2])
        try await greeter.forget()
        let again = try await greeter.remember("Cy")
        XCTAssertEqual(again, 1)
    }

    func testCallsTravelAsNamedParamsAndBindByPositionToo() async throws {
        let recorder = RecordingTransport(ModuleTransport().serving(module))
        let greeter = try await GreeterProxy.connect(recorder)
        _ = try await greeter.greet(name: "Ann", times: 3)
        _ = try await greeter.remember("Bob")
        XCTAssertEqual(recorder.calls.last(2), [
            .init(method: "greeter.greet", params: ["name": "Ann", "times": 3]),
            .init(method: "greeter.remember", params: ["name": "Bob"]),
        ])
        // What any other client may send: params by position, bound to the declared names.
        let byPosition = await GreeterModule.methods[0].call(module, params: ["Cy", 2])
        XCTAssertEqual(byPosition, .result("Hello, Cy! Hello, Cy!"))
        let wrongType = await GreeterModule.methods[0].call(module, params: ["name": 1])
        XCTAssertEqual(wrongType, .error(.invalidParams("parameter 'name': expected a string, got a number")))
        let unknown = await GreeterModule.methods[0].call(module, params: ["name": "Ann", "time": 2])
        XCTAssertEqual(unknown, .error(.invalidParams("unknown parameter 'time'")))
    }

    func testDocumentedErrorsArriveTyped() async throws {
        let greeter = try await GreeterProxy.connect(ModuleTransport().serving(module))
        do {
            _ = try await greeter.greet(name: "Mallory", times: nil)
            XCTFail("expected Unwelcome")
        } catch let error as Unwelcome {
            XCTAssertEqual(error, Unwelcome(name: "Mallory", reasons: ["listens in"]))
            XCTAssertEqual(error.code, 7)
            XCTAssertEqual(error.message, "Unwelcome")
        }
        do {
            _ = try await greeter.greet(name: "Eve", times: nil)
            XCTFail("expected an RPCError")
        } catch let error as RPCError {
            XCTAssertEqual(error, RPCError(code: 8, message: "Undocumented", data: ["who": "Eve"]))
        }
    }

    func testTheDeclarationDescribesTheModule() throws {
        let interface = GreeterProxy.rpcInterface
        XCTAssertEqual(interface.service, "greeter")
        XCTAssertEqual(interface.summary, "A small interface of the tests' own, declared once and used for both sides below.")
        XCTAssertEqual(interface.methods.map(\.name), ["greet", "remember", "forget"])
        let greet = interface.methods[0]
        XCTAssertEqual(greet.summary, "Greets someone.")
        XCTAssertEqual(greet.params, [.string("name"), RPCParam("times", schema: ["type": "integer"], optional: true)])
        XCTAssertEqual(greet.result, .string("greeting"))
        XCTAssertEqual(greet.errors, [RPCError(code: 7, message: "Unwelcome")])
        XCTAssertEqual(greet.flags, [.readOnly])
        XCTAssertEqual(interface.methods[1].params, [.string("name")], "an unlabelled parameter goes by its name")
        XCTAssertEqual(interface.methods[1].flags, [.mayBlock])
        XCTAssertNil(interface.methods[2].result)

        XCTAssertEqual(GreeterModule.name, "greeter")
        XCTAssertEqual(GreeterModule.summary, interface.summary)
        XCTAssertEqual(GreeterModule.methods.map(\.params), interface.methods.map(\.params))
        XCTAssertEqual(GreeterModule.methods.map(\.readOnly), [true, false, false])
        XCTAssertEqual(GreeterModule.methods.map(\.mayBlock), [false, true, false])
        XCTAssertEqual(RPCModuleExport.problems(of: GreeterModule.self), [])
    }

    func testAnImplementationThatDoesNotSuspendRunsWithoutATask() async throws {
        XCTAssertEqual(SyncGreeterModule.rpcImplementations.map { $0.runNow != nil }, [true, true, true])
        XCTAssertEqual(GreeterModule.rpcImplementations.map { $0.runNow != nil }, [false, false, false])
        XCTAssertEqual(SyncGreeterModule.rpcInterface, GreeterModule.rpcInterface)
        let greeter = try await GreeterProxy.connect(ModuleTransport().serving(SyncGreeterModule(context: RPCModuleContext())))
        let greeting = try await greeter.greet(name: "Ann", times: nil)
        XCTAssertEqual(greeting, "Hi, Ann!")
        do {
            _ = try await greeter.greet(name: "Mallory", times: nil)
            XCTFail("expected Unwelcome")
        } catch let error as Unwelcome {
            XCTAssertEqual(error.name, "Mallory")
        }
        let count = try await greeter.remember("Ann")
        XCTAssertEqual(count, 1)
        try await greeter.forget()
    }

    func testAFingerprintMismatchIsRefusedBeforeAnyCall() async throws {
        let recorder = RecordingTransport(ModuleTransport().serving(module))
        let expected = GreeterV2Proxy.rpcInterface.fingerprint()
        let found = GreeterProxy.rpcInterface.fingerprint()
        XCTAssertNotEqual(expected, found)
        do {
            _ = try await GreeterV2Proxy.connect(recorder)
            XCTFail("expected a fingerprint mismatch")
        } catch let error as RPCProxyError {
            XCTAssertEqual(error, .fingerprintMismatch(service: "greeter", expected: expected, found: found))
            XCTAssertTrue(String(describing: error).contains(expected) && String(describing: error).contains(found))
        }
        XCTAssertEqual(recorder.calls.map(\.method), ["rpc.discover"], "nothing but the check was sent")

        // On purpose, across versions: the methods that did not change still work.
        let across = try await GreeterV2Proxy.connect(recorder, fingerprintCheck: .skipped)
        let count = try await across.remember("Ann")
        XCTAssertEqual(count, 1)
    }

    func testAServiceServedUnderAnotherNameIsCheckedUnderThatName() async throws {
        let transport = ModuleTransport().serving(module, as: "hello")
        do {
            _ = try await GreeterProxy.connect(transport)
            XCTFail("expected serviceNotOffered")
        } catch let error as RPCProxyError {
            XCTAssertEqual(error, .serviceNotOffered(service: "greeter"))
        }
        let greeter = try await GreeterProxy.connect(transport, service: "hello")
        let greeting = try await greeter.greet(name: "Ann", times: nil)
        XCTAssertEqual(greeting, "Hello, Ann!")
    }
}

/// Passes calls on and remembers them.
final class RecordingTransport: RPCProxyTransport {
    struct Call: Equatable {
        let method: String
        let params: JSONValue
    }

    private let next: any RPCProxyTransport
    private let recorded = Mutex<[Call]>([])

    init(_ next: any RPCProxyTransport) {
        self.next = next
    }

    var calls: [Call] { recorded.withLock { $0 } }

    func callForProxy(_ method: String, params: JSONValue) async throws -> JSONValue {
        recorded.withLock { $0.append(Call(method: method, params: params)) }
        return try await next.callForProxy(method, params: params)
    }
}

extension Array {
    func last(_ count: Int) -> [Element] { Array(suffix(count)) }
}
