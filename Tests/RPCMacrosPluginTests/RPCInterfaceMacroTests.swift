import MacroTesting
import RPCMacrosPlugin
import XCTest

/// What `@RPCInterface` and `@RPCMethod` write, and what they refuse, checked against the expansion as text
/// (swift-macro-testing). A change to the generated code shows here as a diff to review; after an intended
/// change, delete the `expansion:` closure and run the test once to record the new text.
final class RPCInterfaceMacroTests: XCTestCase {
    override func invokeTest() {
        withMacroTesting(macros: ["RPCInterface": RPCInterfaceMacro.self, "RPCMethod": RPCMethodMacro.self]) {
            super.invokeTest()
        }
    }

    /// Every part of the expansion: the proxy, the `Sync` protocol, the declaration (summaries from the doc
    /// comments, the marker's result name, flags and errors) and the two ways of running a method.
    func testAPublicInterfaceExpandsToProxySyncProtocolDeclarationAndImplementations() {
        assertMacro {
            """
            /// Adds numbers.
            @RPCInterface(service: "calc")
            public protocol Calculator: Sendable {
                /// Returns a + b.
                @RPCMethod(result: "sum", readOnly: true, errors: [ResultOutOfRange.self])
                func add(a: Double, b: Double) async throws -> Double

                /// Returns the sum of any count of numbers given by position.
                @RPCMethod(paramsList: true)
                func sum(_ numbers: [Double]) async throws -> Double

                /// Forgets everything.
                @RPCMethod(mayBlock: true)
                func reset() async throws
            }
            """
        } expansion: {
            """
            /// Adds numbers.
            public protocol Calculator: Sendable {
                /// Returns a + b.
                func add(a: Double, b: Double) async throws -> Double

                /// Returns the sum of any count of numbers given by position.
                func sum(_ numbers: [Double]) async throws -> Double

                /// Forgets everything.
                func reset() async throws
            }

            /// `Calculator` on a server: each method calls `calc.<method>` with named params. Made by
            /// `RPCProxy.connect` or `RPCClient.proxy`, which check the interface fingerprint first.
            public struct CalculatorProxy: Calculator, RPCProxy {
                public let connection: RPCProxyConnection

                public init(connection: RPCProxyConnection) {
                    self.connection = connection
                }

                public func add(a: Double, b: Double) async throws -> Double {
                    try await connection.call("add", ["a": try RPCValueEncoding.argument(a), "b": try RPCValueEncoding.argument(b)], errors: [ResultOutOfRange.self], returning: (Double).self)
                }

                public func sum(_ numbers: [Double]) async throws -> Double {
                    try await connection.call("sum", list: numbers.map {
                            try RPCValueEncoding.value($0)
                        }, returning: (Double).self)
                }

                public func reset() async throws {
                    let _: JSONValue = try await connection.call("reset", [:])
                }
            }

            /// `Calculator` for implementations whose methods never suspend: a module conforming to it runs each
            /// call as a plain function call on rpcd's thread, without a task.
            public protocol SyncCalculator: Calculator {
                func add(a: Double, b: Double) throws -> Double
                func sum(_ numbers: [Double]) throws -> Double
                func reset() throws
            }

            extension Calculator {
                /// The interface `Calculator` declares: what `rpc.discover` lists and the fingerprint hashes.
                public static var rpcInterface: RPCInterfaceDeclaration {
                    RPCInterfaceDeclaration(
                        service: "calc", summary: "Adds numbers.",
                        methods: [
                        RPCMethodDescriptor(
                                name: "add", summary: "Returns a + b.", params: [RPCSchema.param("a", (Double).self), RPCSchema.param("b", (Double).self)],
                                result: RPCSchema.param("sum", (Double).self), errors: [ResultOutOfRange.documentation], flags: [.readOnly]),
                        RPCMethodDescriptor(
                                name: "sum", summary: "Returns the sum of any count of numbers given by position.", params: [],
                                result: RPCSchema.param("result", (Double).self), errors: [], flags: []),
                        RPCMethodDescriptor(
                                name: "reset", summary: "Forgets everything.", params: [],
                                result: nil, errors: [], flags: [.mayBlock])
                        ],
                        events: [])
                }
            }

            extension Calculator where Self: Sendable {
                /// Each method of `Calculator`, run on a conforming type: what a module exports.
                public static var rpcImplementations: [RPCMethodImplementation<Self>] {
                    let methods = rpcInterface.methods
                    return [
                        RPCMethodImplementation(
                            methods[0], paramsList: false,
                            invoke: { implementation, arguments in
                                return try ResultEncoding.encode(await implementation.add(a: arguments.decode("a"), b: arguments.decode("b")))
                            }),
                        RPCMethodImplementation(
                            methods[1], paramsList: true,
                            invoke: { implementation, arguments in
                                return try ResultEncoding.encode(await implementation.sum(arguments.decodeList()))
                            }),
                        RPCMethodImplementation(
                            methods[2], paramsList: false,
                            invoke: { implementation, arguments in
                                try await implementation.reset()
                            return ResultEncoding.null
                            })
                    ]
                }
            }

            extension Calculator where Self: SyncCalculator & Sendable {
                /// Each method of `Calculator`, run on an implementation whose methods do not suspend.
                public static var rpcImplementations: [RPCMethodImplementation<Self>] {
                    let methods = rpcInterface.methods
                    return [
                        RPCMethodImplementation(
                            methods[0], paramsList: false,
                            invokeNow: { implementation, arguments in
                                return try ResultEncoding.encode(implementation.add(a: arguments.decode("a"), b: arguments.decode("b")))
                            }),
                        RPCMethodImplementation(
                            methods[1], paramsList: true,
                            invokeNow: { implementation, arguments in
                                return try ResultEncoding.encode(implementation.sum(arguments.decodeList()))
                            }),
                        RPCMethodImplementation(
                            methods[2], paramsList: false,
                            invokeNow: { implementation, arguments in
                                try implementation.reset()
                            return ResultEncoding.null
                            })
                    ]
                }
            }
            """
        }
    }

    /// An internal protocol gives internal generated declarations, and the events argument reaches the
    /// declaration as written.
    func testAnInternalInterfaceWithEvents() {
        assertMacro {
            """
            @RPCInterface(service: "kv", events: [RPCEventDescriptor(name: "changed")])
            protocol Store {
                func get(key: String) async throws -> String?
            }
            """
        } expansion: {
            """
            protocol Store {
                func get(key: String) async throws -> String?
            }

            /// `Store` on a server: each method calls `kv.<method>` with named params. Made by
            /// `RPCProxy.connect` or `RPCClient.proxy`, which check the interface fingerprint first.
            struct StoreProxy: Store, RPCProxy {
                let connection: RPCProxyConnection

                init(connection: RPCProxyConnection) {
                    self.connection = connection
                }

                func get(key: String) async throws -> String? {
                    try await connection.call("get", ["key": try RPCValueEncoding.argument(key)], returning: (String?).self)
                }
            }

            /// `Store` for implementations whose methods never suspend: a module conforming to it runs each
            /// call as a plain function call on rpcd's thread, without a task.
            protocol SyncStore: Store {
                func get(key: String) throws -> String?
            }

            extension Store {
                /// The interface `Store` declares: what `rpc.discover` lists and the fingerprint hashes.
                static var rpcInterface: RPCInterfaceDeclaration {
                    RPCInterfaceDeclaration(
                        service: "kv", summary: "",
                        methods: [
                        RPCMethodDescriptor(
                                name: "get", summary: "", params: [RPCSchema.param("key", (String).self)],
                                result: RPCSchema.param("result", (String?).self), errors: [], flags: [])
                        ],
                        events: [RPCEventDescriptor(name: "changed")])
                }
            }

            extension Store where Self: Sendable {
                /// Each method of `Store`, run on a conforming type: what a module exports.
                static var rpcImplementations: [RPCMethodImplementation<Self>] {
                    let methods = rpcInterface.methods
                    return [
                        RPCMethodImplementation(
                            methods[0], paramsList: false,
                            invoke: { implementation, arguments in
                                return try ResultEncoding.encode(await implementation.get(key: arguments.decode("key")))
                            })
                    ]
                }
            }

            extension Store where Self: SyncStore & Sendable {
                /// Each method of `Store`, run on an implementation whose methods do not suspend.
                static var rpcImplementations: [RPCMethodImplementation<Self>] {
                    let methods = rpcInterface.methods
                    return [
                        RPCMethodImplementation(
                            methods[0], paramsList: false,
                            invokeNow: { implementation, arguments in
                                return try ResultEncoding.encode(implementation.get(key: arguments.decode("key")))
                            })
                    ]
                }
            }
            """
        }
    }

    func testOnlyAProtocolDeclaresAService() {
        assertMacro {
            """
            @RPCInterface(service: "calc")
            struct Calculator {}
            """
        } diagnostics: {
            """
            @RPCInterface(service: "calc")
            ┬─────────────────────────────
            ├─ 🛑 @RPCInterface declares a service with a protocol
            ╰─ 🛑 @RPCInterface declares a service with a protocol
            struct Calculator {}
            """
        }
    }

    func testTheServiceNameIsAStringLiteral() {
        assertMacro {
            """
            let name = "calc"
            @RPCInterface(service: name)
            protocol Calculator {}
            """
        } diagnostics: {
            """
            let name = "calc"
            @RPCInterface(service: name)
            ┬───────────────────────────
            ├─ 🛑 @RPCInterface needs the service name: @RPCInterface(service: "calc")
            ╰─ 🛑 @RPCInterface needs the service name: @RPCInterface(service: "calc")
            protocol Calculator {}
            """
        }
    }

    func testMethodsMustBeAsyncThrows() {
        assertMacro {
            """
            @RPCInterface(service: "calc")
            protocol Calculator {
                func add(a: Double, b: Double) throws -> Double
            }
            """
        } diagnostics: {
            """
            @RPCInterface(service: "calc")
            ┬─────────────────────────────
            ├─ 🛑 'add' must be 'async throws': a proxy's call waits for the network and can fail
            ╰─ 🛑 'add' must be 'async throws': a proxy's call waits for the network and can fail
            protocol Calculator {
                func add(a: Double, b: Double) throws -> Double
            }
            """
        }
    }

    func testGenericMethodsAreRefused() {
        assertMacro {
            """
            @RPCInterface(service: "calc")
            protocol Calculator {
                func add<T: Codable>(a: T, b: T) async throws -> T
            }
            """
        } diagnostics: {
            """
            @RPCInterface(service: "calc")
            ┬─────────────────────────────
            ├─ 🛑 'add' cannot be generic: its parameters need JSON Schemas
            ╰─ 🛑 'add' cannot be generic: its parameters need JSON Schemas
            protocol Calculator {
                func add<T: Codable>(a: T, b: T) async throws -> T
            }
            """
        }
    }

    func testVariadicParametersAreRefused() {
        assertMacro {
            """
            @RPCInterface(service: "calc")
            protocol Calculator {
                func sum(_ numbers: Double...) async throws -> Double
            }
            """
        } diagnostics: {
            """
            @RPCInterface(service: "calc")
            ┬─────────────────────────────
            ├─ 🛑 'sum' cannot forward a variadic parameter: declare an array with @RPCMethod(paramsList: true)
            ╰─ 🛑 'sum' cannot forward a variadic parameter: declare an array with @RPCMethod(paramsList: true)
            protocol Calculator {
                func sum(_ numbers: Double...) async throws -> Double
            }
            """
        }
    }

    func testParamsListNeedsOneArrayParameter() {
        assertMacro {
            """
            @RPCInterface(service: "calc")
            protocol Calculator {
                @RPCMethod(paramsList: true)
                func sum(a: Double, b: Double) async throws -> Double
            }
            """
        } diagnostics: {
            """
            @RPCInterface(service: "calc")
            ┬─────────────────────────────
            ├─ 🛑 'sum': paramsList: true needs exactly one parameter, an array
            ╰─ 🛑 'sum': paramsList: true needs exactly one parameter, an array
            protocol Calculator {
                @RPCMethod(paramsList: true)
                func sum(a: Double, b: Double) async throws -> Double
            }
            """
        }
    }

    func testAProtocolDeclaresOnlyMethods() {
        assertMacro {
            """
            @RPCInterface(service: "calc")
            protocol Calculator {
                var precision: Int { get }
            }
            """
        } diagnostics: {
            """
            @RPCInterface(service: "calc")
            ┬─────────────────────────────
            ├─ 🛑 an @RPCInterface protocol declares only methods, not 'var precision: Int { get }'
            ╰─ 🛑 an @RPCInterface protocol declares only methods, not 'var precision: Int { get }'
            protocol Calculator {
                var precision: Int { get }
            }
            """
        }
    }

    func testRPCMethodMarksOnlyMethods() {
        assertMacro {
            """
            @RPCMethod(readOnly: true)
            var precision: Int
            """
        } diagnostics: {
            """
            @RPCMethod(readOnly: true)
            ┬─────────────────────────
            ╰─ 🛑 @RPCMethod marks a method of an @RPCInterface protocol
            var precision: Int
            """
        }
    }
}
