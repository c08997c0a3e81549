import JSONRPC
import NIOCore
import RPCBinding
import RPCCore
import RPCJSON
import RPCProtocol

/// A small compiled-in `demo` service for trying rpcd out and for tests, until plugin modules exist:
/// `demo.echo` returns its params, `demo.add` sums numbers, `demo.sleep` answers after a delay without
/// occupying a thread, `demo.fail` always fails with an application error.
public struct DemoService: RPCService {
    public init() {}

    public let descriptor = RPCServiceDescriptor(
        name: "demo", version: RPCDaemonVersion.version, summary: "Demonstration methods",
        methods: [
            RPCMethodDescriptor(
                name: "echo", summary: "Returns its params unchanged (null when there are none)",
                result: RPCParam("params")),
            RPCMethodDescriptor(
                name: "add", summary: "Adds numbers given by position or as values of named params",
                params: [RPCParam("a", schema: ["type": "number"]),
                         RPCParam("b", schema: ["type": "number"])],
                result: RPCParam("sum", schema: ["type": "number"])),
            RPCMethodDescriptor(
                name: "sleep", summary: "Answers \"done\" after the given milliseconds (at most 60000)",
                params: [RPCParam("ms", schema: ["type": "integer", "minimum": 0, "maximum": 60000])],
                result: RPCParam("done", schema: ["type": "string"])),
            RPCMethodDescriptor(
                name: "fail", summary: "Always fails with error 1 and the params as data",
                errors: [RPCError(code: 1, message: "Requested failure")]),
        ])

    public func handle(_ call: RPCCall, responder: RPCResponder) {
        switch call.method.name {
        case "echo":
            responder.succeed(rawJSON: call.params ?? ByteBuffer(string: "null"))
        case "add":
            do {
                let numbers = try Self.numbers(in: call.paramsValue())
                responder.succeed(.number(numbers.reduce(0, +)))
            } catch {
                responder.fail(error)
            }
        case "sleep":
            do {
                let params = try call.paramsValue()
                guard let ms = (params[0] ?? params["ms"])?.intValue, (0...60_000).contains(ms) else {
                    throw RPCError.invalidParams("expected 'ms', an integer from 0 to 60000")
                }
                call.eventLoop.scheduleTask(in: .milliseconds(Int64(ms))) { responder.succeed("done") }
            } catch {
                responder.fail(error)
            }
        default:
            responder.fail(RPCError(code: 1, message: "Requested failure", data: try? call.paramsValue()))
        }
    }

    private static func numbers(in params: JSONValue) throws(RPCError) -> [Double] {
        let values = params.arrayValue ?? params.objectValue.map { Array($0.values) } ?? []
        var numbers: [Double] = []
        for value in values {
            guard let number = value.doubleValue else { throw .invalidParams("every param must be a number") }
            numbers.append(number)
        }
        return numbers
    }
}
