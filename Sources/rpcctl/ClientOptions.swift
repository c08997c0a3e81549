import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import RPCClient
import RPCJSON
import RPCProtocol
import RPCWire

/// Options every subcommand takes: where to connect, machine output, and the timeout.
struct ClientOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "HOST:PORT, [IPV6]:PORT, tls://HOST:PORT or a Unix socket path (default: $RPCD_ADDRESS, else \(RPCEndpoint.defaultSocketPath) if it exists, else 127.0.0.1:\(RPCEndpoint.defaultPort)).",
            valueName: "address"))
    var address: String?

    @Flag(name: .long, help: "Machine output: one JSON document on stdout.")
    var json = false

    @Flag(name: .long, help: "Connect with TLS (as a tls:// address does).")
    var tls = false

    @Option(name: .customLong("ca"), help: ArgumentHelp("PEM file of the CA that signed the server's certificate (default: the system's CAs).", valueName: "file"))
    var caFile: String?

    @Option(name: .customLong("cert"), help: ArgumentHelp("PEM file of this client's certificate, for servers that ask for one (with --key).", valueName: "file"))
    var certificateFile: String?

    @Option(name: .customLong("key"), help: ArgumentHelp("PEM file of the client certificate's private key.", valueName: "file"))
    var privateKeyFile: String?

    @Option(name: .customLong("server-name"), help: ArgumentHelp("The name the server's certificate must carry (default: the address's host).", valueName: "name"))
    var serverName: String?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for the connection and for each reply; a call not answered by then is cancelled in the daemon too.", valueName: "seconds"))
    var timeout: Double = 10

    mutating func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
        guard (certificateFile == nil) == (privateKeyFile == nil) else { throw ValidationError("--cert and --key go together") }
        _ = try endpoint()
    }

    var timeoutDuration: Duration { .milliseconds(Int64((timeout * 1000).rounded())) }

    /// The endpoint to use: --address, else $RPCD_ADDRESS, else the default socket if it exists, else TCP.
    func endpoint(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> RPCEndpoint {
        let endpoint: RPCEndpoint
        do {
            endpoint = try RPCDefaultEndpoint.resolve(address: address, environment: environment)
        } catch {
            throw ValidationError(error.description)
        }
        return try withTLSIfAsked(endpoint)
    }

    /// `endpoint` as TLS when --tls says so (a Unix socket cannot be).
    func withTLSIfAsked(_ endpoint: RPCEndpoint) throws -> RPCEndpoint {
        guard tls, !endpoint.isTLS else { return endpoint }
        guard case .tcp(let host, let port) = endpoint else {
            throw ValidationError("--tls needs a TCP address (--address HOST:PORT), not the Unix socket \(endpoint)")
        }
        return .tls(host: host, port: port)
    }

    /// The TLS files and name --ca, --cert, --key and --server-name give.
    var tlsOptions: RPCClientTLS {
        RPCClientTLS(caFile: caFile, certificateFile: certificateFile, privateKeyFile: privateKeyFile, serverName: serverName)
    }

    /// Connects (to `endpoint`, else to `endpoint()`; with `tls`, else `tlsOptions`), runs `body`, closes; every
    /// client error is reported (see `report`) and becomes an exit status.
    func withClient<Value>(
        method: String? = nil, endpoint chosen: RPCEndpoint? = nil, tls: RPCClientTLS? = nil,
        _ body: (RPCClient) async throws(RPCClientError) -> Value
    ) async throws -> Value {
        let endpoint = try chosen ?? endpoint()
        let client: RPCClient
        do {
            client = try await RPCClient.connect(to: endpoint, tls: tls ?? tlsOptions, timeout: timeoutDuration)
        } catch {
            throw report(error, method: method)
        }
        do {
            let value = try await body(client)
            await client.close()
            return value
        } catch {
            await client.close()
            throw report(error, method: method)
        }
    }

    /// Prints `error` (stderr; with --json a remote error object also on stdout) and returns the exit status.
    func report(_ error: RPCClientError, method: String?) -> ExitCode {
        let subject = method.map { "\($0): " } ?? ""
        switch error {
        case .remote(let remote):
            Terminal.error("\(subject)\(remote.message) (\(remote.code))")
            if let data = remote.data, data != .null { Terminal.note("data: \(data.jsonText)") }
            if json {
                var object: [String: JSONValue] = ["code": .number(remote.code), "message": .string(remote.message)]
                if let data = remote.data { object["data"] = data }
                Terminal.printJSON(.object(object))
            }
            return ExitStatus.remoteError
        case .connectFailed(_, let reason):
            let hint =
                if reason.contains("permission denied") { "check the socket's permissions" }
                else if reason.hasPrefix("TLS") { "check --ca and --server-name" }
                else { "is rpcd running?" }
            Terminal.error("\(error) (\(hint))")
            return ExitStatus.unavailable
        case .timedOut:
            Terminal.error("\(subject)no reply within \(Terminal.format(timeout, digits: timeout < 1 ? 3 : 0)) s")
            return ExitStatus.timedOut
        case .cancelled:
            Terminal.error("\(subject)cancelled")
            return ExitStatus.timedOut
        case .connectionClosed:
            Terminal.error("\(subject)the server closed the connection before replying")
            return ExitStatus.protocolError
        case .protocolViolation, .tlsFailed:
            Terminal.error("\(subject)\(error)")
            return ExitStatus.protocolError
        case .subscriptionEnded:
            Terminal.error("\(error)")
            return ExitStatus.unavailable
        }
    }
}
