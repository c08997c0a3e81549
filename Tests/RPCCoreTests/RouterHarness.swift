import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import RPCBinding
import RPCCore
import RPCJSON
import RPCProtocol
import XCTest

/// Runs payloads through a router on an `EmbeddedEventLoop`: the in-process test client for RPCCore.
struct RouterHarness {
    let router: RPCRouter
    let loop = EmbeddedEventLoop()

    init(
        services: [any RPCService], maxNestingDepth: Int = 64, maxBatchLength: Int = 1024, maxReplySize: Int = 1 << 20
    ) throws {
        router = RPCRouter(
            registry: try RPCServiceRegistry(services: services),
            parser: RPCEnvelopeParser(maxNestingDepth: maxNestingDepth, maxBatchLength: maxBatchLength),
            maxReplySize: maxReplySize)
    }

    static let connection = RPCConnectionInfo(id: 1, peer: .unixSocket(), logger: Logger(label: "test"))

    /// Dispatches one payload; returns whether a reply was produced (nil = none yet) and its text.
    func send(_ payload: String) -> Reply {
        let box = Reply()
        router.dispatch(router.parser.parse(ByteBuffer(string: payload)), connection: Self.connection, eventLoop: loop) {
            box.complete($0)
        }
        loop.run()
        return box
    }

    /// Sends and expects a reply; returns it parsed.
    func call(_ payload: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let reply = send(payload)
        loop.run()
        XCTAssertTrue(reply.isComplete, "no completion for \(payload)", file: file, line: line)
        let text = try XCTUnwrap(reply.text, "expected a reply to \(payload)", file: file, line: line)
        return try JSONValue(parsing: text)
    }

    final class Reply {
        private(set) var isComplete = false
        private(set) var text: String?
        private(set) var completions = 0

        func complete(_ buffer: ByteBuffer?) {
            completions += 1
            isComplete = true
            text = buffer.map { String(buffer: $0) }
        }
    }
}

/// The methods of the JSON-RPC 2.0 specification's examples, as service `spec`
/// (`subtract` becomes `spec.subtract`, and so on).
struct SpecService: RPCService {
    let descriptor = RPCServiceDescriptor(
        name: "spec", version: "1", summary: "JSON-RPC 2.0 specification examples",
        methods: [
            RPCMethodDescriptor(
                name: "subtract",
                params: [RPCParam("minuend", schema: ["type": "number"]),
                         RPCParam("subtrahend", schema: ["type": "number"])]),
            RPCMethodDescriptor(name: "sum"),
            RPCMethodDescriptor(name: "update"),
            RPCMethodDescriptor(name: "notify_hello"),
            RPCMethodDescriptor(name: "get_data"),
            RPCMethodDescriptor(name: "explode"),
            RPCMethodDescriptor(name: "product"),
        ])

    struct Secret: Error {}

    func handle(_ call: RPCCall, responder: RPCResponder) {
        do {
            let params = try call.paramsValue()
            switch call.method.name {
            case "subtract":
                guard let minuend = (params[0] ?? params["minuend"])?.intValue,
                      let subtrahend = (params[1] ?? params["subtrahend"])?.intValue
                else { throw RPCError.invalidParams("expected minuend and subtrahend") }
                responder.succeed(.number(minuend - subtrahend))
            case "sum":
                responder.succeed(.number((params.arrayValue ?? []).compactMap(\.intValue).reduce(0, +)))
            case "get_data":
                responder.succeed(["hello", 5])
            case "explode":
                throw Secret()
            case "product":
                responder.succeed(.number((params.arrayValue ?? []).compactMap(\.doubleValue).reduce(1, *)))
            default:
                responder.succeed(.null)
            }
        } catch {
            responder.fail(error)
        }
    }
}
