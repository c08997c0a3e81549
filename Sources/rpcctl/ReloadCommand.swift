import ArgumentParser
import RPCClient
import RPCJSON
import RPCProtocol

struct ReloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Reload rpcd's configuration and wait for the outcome (rpcd.reload).",
        discussion: """
            Re-reads rpcd.conf and the handler files as SIGHUP does, but returns only when the reload is over: \
            prints the services now served, or fails (exit status 1) with the reason when rpcd kept its previous \
            configuration. A reload that refused a handler (a value its module refused, a broken module file) \
            fails too, and names each with its file, line and reason; the rest of the reload applies, and the \
            refused handler's previous instance keeps serving. `systemctl reload rpcd` runs this. Needs the right \
            to change state (root or group rpcd on the Unix socket, by default).
            """)

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let timeout = options.timeoutDuration
        let result = try await options.withClient(method: "rpcd.reload") { client throws(RPCClientError) in
            try await client.call("rpcd.reload", timeout: timeout)
        }
        let refused = (result["refused"]?.arrayValue ?? []).map { RPCHandlerRefusal(json: $0) }
        if options.json {
            Terminal.printJSON(result)
        } else {
            let services = result["services"]?.arrayValue?.compactMap(\.stringValue) ?? []
            print("reloaded; serving \(services.joined(separator: ", "))")
        }
        guard !refused.isEmpty else { return }
        // What `systemctl reload` shows, and the reason it fails: each refusal, on stderr.
        for refusal in refused {
            Terminal.error(refusal?.description ?? "a handler was refused (see journalctl -u rpcd)")
        }
        throw ExitStatus.remoteError
    }
}
