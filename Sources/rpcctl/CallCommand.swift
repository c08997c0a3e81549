import ArgumentParser
import RPCClient
import RPCJSON

struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Call a method and print its result.",
        discussion: """
            Arguments KEY=VALUE make by-name params, other arguments by-position params; each value is JSON if \
            it parses as JSON, else a string (name=bob is "bob", n=3 is 3, s='"3"' is "3"). The two forms \
            cannot be mixed; --params passes any params verbatim.

              rpcctl call demo.add a=1 b=2
              rpcctl call demo.add 1 2
              rpcctl call demo.echo --params '{"list":[1,2],"flag":true}'
            """)

    @Argument(help: "The method, as SERVICE.METHOD.")
    var method: String

    @Argument(help: ArgumentHelp("Params: KEY=VALUE (by name) or VALUE (by position).", valueName: "arg"))
    var arguments: [String] = []

    @Option(name: .long, help: ArgumentHelp("Params as a JSON array or object (instead of ARGs).", valueName: "json"))
    var params: String?

    @OptionGroup var options: ClientOptions

    func validate() throws {
        _ = try resolvedParams()
    }

    func resolvedParams() throws -> JSONValue? {
        do {
            if let params {
                guard arguments.isEmpty else { throw ValidationError("--params cannot be combined with arguments") }
                return try RPCCallArguments.params(json: params)
            }
            return try RPCCallArguments.params(from: arguments)
        } catch let error as RPCCallArguments.UsageError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        let params = try resolvedParams()
        let timeout = options.timeoutDuration
        let result = try await options.withClient(method: method) { client throws(RPCClientError) in
            try await client.call(method, params: params, timeout: timeout)
        }
        print(options.json ? result.jsonText : result.prettyPrinted())
    }
}
