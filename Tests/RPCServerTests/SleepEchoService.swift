import JSONRPC
import NIOCore
import RPCBinding
import RPCCore
import RPCJSON
import RPCProtocol

/// A test-only in-process service shaped like the `echo` example module, for driving the connection
/// pipeline without loading a module: `echo.echo` returns its params, `echo.sleep` answers "done" after
/// `ms` milliseconds on the call's event loop, so an `EmbeddedEventLoop` decides when time passes.
struct SleepEchoService: RPCService {
    let descriptor = RPCServiceDescriptor(
        name: "echo", version: "0.0.0", summary: "Test fixture: echo and sleep",
        methods: [
            RPCMethodDescriptor(name: "echo", summary: "Returns its params unchanged"),
            RPCMethodDescriptor(
                name: "sleep", summary: "Answers \"done\" after ms milliseconds",
                params: [RPCParam("ms", schema: ["type": "integer"])]),
        ])

    func handle(_ call: RPCCall, responder: RPCResponder) {
        switch call.method.name {
        case "echo":
            responder.succeed(rawJSON: call.params ?? ByteBuffer(string: "null"))
        case "sleep":
            do {
                let params = try call.paramsValue()
                guard let ms = (params[0] ?? params["ms"])?.intValue, ms >= 0 else {
                    throw RPCError.invalidParams("expected 'ms', a non-negative integer")
                }
                call.eventLoop.scheduleTask(in: .milliseconds(Int64(ms))) { responder.succeed("done") }
            } catch {
                responder.fail(error)
            }
        default:
            responder.fail(RPCError.methodNotFound("echo.\(call.method.name)"))
        }
    }
}
