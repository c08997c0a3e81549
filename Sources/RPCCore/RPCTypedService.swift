import JSONRPC
import NIOCore
import RPCBinding
import RPCJSON
import RPCProtocol

/// A service whose methods are declared once, with typed parameters: its descriptor (what `rpc.discover`
/// lists and the fingerprint covers) is derived from `methods`, and every call's params are bound, checked and
/// decoded by `ParamsBinding`, the binder the Swift module SDK uses too. The daemon's built-in services are
/// written this way, so they describe themselves and bind params exactly as modules do.
///
/// Methods run on the connection's event loop and answer at once: they must not block.
package protocol RPCTypedService: RPCService {
    /// The service name (`rpcd`), its version and a one-line summary.
    static var name: String { get }
    static var version: String { get }
    static var summary: String { get }
    /// The methods, in the order `rpc.discover` lists them.
    static var methods: [RPCServiceMethod<Self>] { get }
    /// The events it publishes (through `RPCRouter.events`, as `name.event`), declared with the methods so
    /// that they are discovered and fingerprinted the same way. Default: none.
    static var events: [RPCEventDescriptor] { get }
}

extension RPCTypedService {
    package static var events: [RPCEventDescriptor] { [] }

    package static func makeDescriptor() -> RPCServiceDescriptor {
        RPCServiceDescriptor(
            name: name, version: version, summary: summary, methods: methods.map(\.descriptor), events: events)
    }

    // Inlinable so that each service's conformance gets a copy specialised for it: the generic one looks up
    // the metadata of `[RPCServiceMethod<Self>]` on every call.
    @inlinable
    package func handle(_ call: RPCCall, responder: RPCResponder) {
        if let answer = answerAtOnce(methodIndex: call.methodIndex, request: call.request, call: { call }) {
            responder.complete(answer)
        } else if case .later(let start) = Self.methods[call.methodIndex].body {
            start(self, call, responder)
        }
    }

    /// Every method but the `later` ones answers at once; a constant one without an `RPCCall`.
    @inlinable
    package func answerAtOnce(methodIndex: Int, request: RPCRequest, call: () -> RPCCall) -> RPCAnswer? {
        // The router found the method in `descriptor`, built from `methods` in the same order.
        switch Self.methods[methodIndex].body {
        case .constant(let json):
            do {
                try RPCCall.requireNoParams(request.params)
                return RPCAnswer(result: json)
            } catch {
                return RPCAnswer(failure: error)
            }
        case .immediate(let run):
            do {
                return RPCAnswer(result: try run(self, call()))
            } catch {
                return RPCAnswer(failure: error)
            }
        case .later:
            return nil
        }
    }
}

/// One method of an `RPCTypedService`: how it is described, and the code that runs it.
package struct RPCServiceMethod<Service: Sendable>: Sendable {
    package let descriptor: RPCMethodDescriptor
    @usableFromInline let body: Body

    /// How a method answers: at once, on the event loop (every method but a few), or later from a task.
    @usableFromInline enum Body: Sendable {
        /// The same result for every call, which must come without params (`rpcd.ping`): answered without
        /// an `RPCCall`.
        case constant(ByteBuffer)
        case immediate(@Sendable (Service, RPCCall) throws -> ByteBuffer)
        case later(@Sendable (Service, RPCCall, RPCResponder) -> Void)
    }

    init(descriptor: RPCMethodDescriptor, run: @escaping @Sendable (Service, RPCCall) throws -> ByteBuffer) {
        self.descriptor = descriptor
        self.body = .immediate(run)
    }

    /// A method without parameters that answers when `body` returns, from a task of its own: for work the
    /// event loop must not wait for (`rpcd.reload`). The call holds its slot until then.
    package static func asyncMethod<Output: Encodable>(
        _ name: String, summary: String = "", result: RPCParam? = nil,
        _ body: @escaping @Sendable (Service, RPCCall) async throws -> Output
    ) -> RPCServiceMethod {
        RPCServiceMethod(
            descriptor: RPCMethodDescriptor(name: name, summary: summary, result: result),
            body: .later { service, call, responder in
                do {
                    try call.requireNoParams()
                } catch {
                    return responder.fail(error)
                }
                Task {
                    do {
                        responder.succeed(rawJSON: ByteBuffer(bytes: try ResultEncoding.encode(try await body(service, call))))
                    } catch {
                        responder.fail(error)
                    }
                }
            })
    }

    private init(descriptor: RPCMethodDescriptor, body: Body) {
        self.descriptor = descriptor
        self.body = body
    }

    /// A method with parameters: the call's params are bound to `params` (by position or by name), checked
    /// against their schemas and decoded into `Params`, whose coding keys are the parameter names.
    package static func method<Params: Decodable, Output: Encodable>(
        _ name: String, summary: String = "", params: [RPCParam], result: RPCParam? = nil, readOnly: Bool = false,
        _ body: @escaping @Sendable (Service, Params, RPCCall) throws -> Output
    ) -> RPCServiceMethod {
        method(name, summary: summary, params: params, result: result, flags: readOnly ? .readOnly : [], body)
    }

    /// A method with parameters and any flags (`.anyPeer` is for methods that reach only the caller's own
    /// connection).
    package static func method<Params: Decodable, Output: Encodable>(
        _ name: String, summary: String = "", params: [RPCParam], result: RPCParam? = nil,
        flags: RPCMethodDescriptor.Flags, _ body: @escaping @Sendable (Service, Params, RPCCall) throws -> Output
    ) -> RPCServiceMethod {
        let binder = ParamsBinder(params)
        return RPCServiceMethod(
            descriptor: RPCMethodDescriptor(name: name, summary: summary, params: params, result: result, flags: flags)
        ) { service, call in
            let members = try binder.bind(try call.paramsValue()).members
            let decoded = try ParamsBinding.decode(Params.self, from: members)
            return ByteBuffer(bytes: try ResultEncoding.encode(try body(service, decoded, call)))
        }
    }

    /// A method without parameters: any params other than none, `[]` or `{}` are -32602.
    package static func method<Output: Encodable>(
        _ name: String, summary: String = "", result: RPCParam? = nil, readOnly: Bool = false,
        _ body: @escaping @Sendable (Service, RPCCall) throws -> Output
    ) -> RPCServiceMethod {
        RPCServiceMethod(
            descriptor: RPCMethodDescriptor(name: name, summary: summary, result: result, flags: readOnly ? .readOnly : [])
        ) { service, call in
            try call.requireNoParams()
            return ByteBuffer(bytes: try ResultEncoding.encode(try body(service, call)))
        }
    }

    /// A read-only method without parameters whose result is already JSON text, for answers that must cost
    /// nothing beyond writing them (`rpcd.ping`).
    package static func constant(_ name: String, summary: String = "", result: RPCParam, json: ByteBuffer) -> RPCServiceMethod {
        RPCServiceMethod(
            descriptor: RPCMethodDescriptor(name: name, summary: summary, result: result, flags: .readOnly),
            body: .constant(json))
    }
}

extension RPCCall {
    /// -32602 unless the params are absent, `[]` or `{}` (with any whitespace), which are checked without
    /// building a value tree: they are what clients send to methods without parameters, `rpcd.ping` among them.
    func requireNoParams() throws(RPCError) {
        try Self.requireNoParams(params)
    }

    @usableFromInline
    static func requireNoParams(_ params: ByteBuffer?) throws(RPCError) {
        guard let params, !params.isEmptyJSONContainer else { return }
        _ = try ParamsBinding.bind(try value(ofParams: params), to: [])
    }
}

extension ByteBuffer {
    /// `[]` or `{}`, with any JSON whitespace around and inside.
    var isEmptyJSONContainer: Bool {
        withUnsafeReadableBytes { bytes in
            var scanner = JSONScanner(bytes: bytes, maxDepth: 1)
            let close: UInt8
            switch scanner.peekNonWhitespace() {
            case UInt8(ascii: "{"): close = UInt8(ascii: "}")
            case UInt8(ascii: "["): close = UInt8(ascii: "]")
            default: return false
            }
            scanner.offset += 1
            return scanner.consume(close) && scanner.peekNonWhitespace() == nil
        }
    }
}
