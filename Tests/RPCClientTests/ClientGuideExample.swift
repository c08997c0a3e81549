// The complete program of docs/CLIENT.md, compiled with the tests (ClientGuideTests checks the two agree).
// BEGIN EXAMPLE
import Logging
import RPCClient
import RPCJSON
import RPCProtocol

/// Adds two numbers with calc.add on whichever of two daemons answers, giving up after two seconds.
func addOnAnyDaemon(_ a: Double, _ b: Double) async throws -> Double {
    let configuration = RPCClient.Configuration(
        endpoints: [.tcp(host: "10.0.0.1", port: 7545), .tcp(host: "10.0.0.2", port: 7545)],
        connections: 2,
        defaultOptions: RPCCallOptions(timeout: .seconds(2)),
        logger: Logger(label: "calc-client"))
    return try await withRPCClient(configuration) { client in
        do {
            let sum = try await client.call("calc.add", params: [.number(a), .number(b)])
            return sum.doubleValue ?? .nan
        } catch RPCClientError.remote(let error) where error.code == RPCError.Code.methodNotFound {
            throw error  // no calc module on that daemon
        } catch RPCClientError.timedOut {
            return .nan  // the daemon was told to cancel the call
        }
    }
}
// END EXAMPLE
