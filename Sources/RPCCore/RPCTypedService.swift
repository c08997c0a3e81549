import JSONRPC
package import NIOCore
package import RPCBinding
import RPCJSON
import RPCProtocol

/// A service whose methods are declared once, with typed parameters, as `RPCMethod`s (the declaration
/// modules and typed interfaces use too): its descriptor (what `rpc.discover` lists and the fingerprint
/// covers) is derived from `methods`, and every call's params are bound, checked and decoded by the same
/// factories (`RPCMethod.method`). The daemon's built-in services are written this way, so they describe
/// themselves and bind params exactly as modules do.
///
/// Methods whose body does not suspend run on the connection's event loop and answer at once (inline, without
/// a responder: `answerAtOnce`): they must not block. A body that `await`s runs in a task of its own, and the
/// call holds its slot until it answers.
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

/// A method of a built-in service: the one method declaration, run on the service for a routed call.
package typealias RPCServiceMethod<Service> = RPCMethod<Service, RPCCall>

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
        if let atOnce = answerAtOnce(methodIndex: call.methodIndex) {
            responder.complete(atOnce.answer(call.request) { call })
        } else if case .suspending(let run) = Self.methods[call.methodIndex].body {
            Task {
                do {
                    responder.succeed(rawJSON: try await run(self, call))
                } catch {
                    responder.fail(error)
                }
            }
        }
    }

    /// Every method but the suspending ones answers at once; a constant one without an `RPCCall`.
    @inlinable
    package func answerAtOnce(methodIndex: Int) -> RPCAtOnceMethod? {
        // The router found the method in `descriptor`, built from `methods` in the same order.
        switch Self.methods[methodIndex].body {
        case .constant(let json):
            return .constant(json)
        case .now(let run):
            return .now { [self] call in try run(self, call) }
        case .suspending:
            return nil
        }
    }
}

/// A routed call as a built-in method's body receives it: the params as the client sent them, and the
/// caller's connection and registry beside them.
extension RPCCall: RPCMethodInput {
    package func withParamsText<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        guard let params else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try params.withUnsafeReadableBytes(body)
    }

    package static func output(_ json: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: json) }
}

extension RPCMethod where Input == RPCCall {
    /// A read-only method without parameters whose result is already JSON text, for answers that must cost
    /// nothing beyond writing them (`rpcd.ping`): answered without an `RPCCall`.
    package static func constant(_ name: String, summary: String = "", result: RPCParam, json: ByteBuffer) -> RPCMethod {
        RPCMethod(RPCMethodDescriptor(name: name, summary: summary, result: result, flags: .readOnly), body: .constant(json))
    }
}

extension RPCCall {
    /// `RPCMethodInput.requireNoParams` for params not (yet) in an `RPCCall`.
    @usableFromInline
    static func requireNoParams(_ params: ByteBuffer?) throws {
        guard let params else { return }
        try params.withUnsafeReadableBytes { try ParamsBinder.requireNone($0) }
    }
}
