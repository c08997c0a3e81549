import ArgumentParser
import RPCClient
import RPCClientTools
import RPCDNSSD
import RPCDiscovery
import RPCJSON
import RPCProtocol
import RPCWire

struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Call a method and print its result.",
        discussion: """
            Arguments KEY=VALUE make by-name params, other arguments by-position params; each value is JSON if \
            it parses as JSON, else a string (name=bob is "bob", n=3 is 3, s='"3"' is "3"). The two forms \
            cannot be mixed; --params passes any params verbatim.

              rpcctl call calc.add a=1 b=2
              rpcctl call calc.add 1 2
              rpcctl call echo.echo --params '{"list":[1,2],"flag":true}'

            With -s/--service SERVICE, rpcctl finds an instance of SERVICE on the local network by DNS-SD \
            (through avahi-daemon) instead of using --address; METHOD may then omit the service (add for \
            calc.add). --api FINGERPRINT refuses to call an instance whose interface fingerprint differs \
            (exit status 65), found by discovery or, with --address, checked with rpc.discover first.

              rpcctl call -s calc calc.add 1 2
              rpcctl call -s calc --api 3b0e51d7c4a1f2e9 add 1 2

            --domain DOMAIN finds the service in that unicast DNS domain instead (wide-area DNS-SD, \
            docs/DISCOVERY.md). --count N makes N calls through one client that follows every instance found: \
            calls go round-robin over them, move to the others when one stops, and instances that appear \
            join; each result is printed, failures on stderr, then "N calls, F failed" (exit status 1 if F > 0).

              rpcctl call -s calc --domain services.example.net --count 100 --interval 0.1 add 1 2
            """)

    @Argument(help: "The method, as SERVICE.METHOD.")
    var method: String

    @Argument(help: ArgumentHelp("Params: KEY=VALUE (by name) or VALUE (by position).", valueName: "arg"))
    var arguments: [String] = []

    @Option(name: .long, help: ArgumentHelp("Params as a JSON array or object (instead of ARGs).", valueName: "json"))
    var params: String?

    @Option(
        name: [.short, .customLong("service")],
        help: ArgumentHelp("Find an instance of SERVICE by DNS-SD and call it (instead of --address).", valueName: "service"))
    var service: String?

    @Option(
        name: .customLong("api"),
        help: ArgumentHelp("Only call an instance whose interface fingerprint is FINGERPRINT.", valueName: "fingerprint"))
    var api: String?

    @Option(name: .long, help: ArgumentHelp("With --service: make N calls, spread over every instance found (round-robin, failover).", valueName: "n"))
    var count: Int = 1

    @Option(name: .long, help: ArgumentHelp("With --count: seconds between calls.", valueName: "seconds"))
    var interval: Double = 0

    @OptionGroup var lookup: DiscoveryOptions

    @OptionGroup var options: ClientOptions

    func validate() throws {
        _ = try resolvedParams()
        if let service {
            do { try DNSSDName.validateServiceName(service) } catch { throw ValidationError("--service: \(error)") }
            guard options.address == nil else { throw ValidationError("--service and --address cannot be combined") }
            if method.contains("."), !method.hasPrefix(service + ".") {
                throw ValidationError("method '\(method)' is not a method of service '\(service)' (--service)")
            }
        }
        if service == nil, lookup.domain != nil { throw ValidationError("--domain needs --service (-s)") }
        guard (1...1_000_000).contains(count) else { throw ValidationError("--count must be between 1 and 1000000") }
        if count > 1, service == nil { throw ValidationError("--count needs --service (-s)") }
        guard interval >= 0, interval <= 3600 else { throw ValidationError("--interval must be between 0 and 3600 seconds") }
        if let api, api.count != 16 || !api.allSatisfy(\.isHexDigit) {
            throw ValidationError("--api takes an interface fingerprint: 16 hex digits, as rpcctl browse and rpcctl list show")
        }
    }

    /// The full method name: with --service, a bare METHOD is SERVICE.METHOD.
    var fullMethod: String {
        guard let service, !method.contains(".") else { return method }
        return service + "." + method
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
        let method = fullMethod
        var endpoint: RPCEndpoint?
        var tls = options.tlsOptions
        if let service, count > 1 {
            try await repeated(service: service, method: method, params: params)
            return
        }
        if let service {
            let instance = try await DiscoveryErrors.reporting(service: service, hint: lookup.hint) { () async throws -> RPCDiscoveredInstance in
                do {
                    return try await ServiceFinder.find(lookup.discovery(service: service), service: service, api: api, timeout: timeout)
                } catch let failure as ServiceFinder.Failure {
                    Terminal.error(failure.description)
                    if case .incompatible = failure { throw ExitStatus.incompatible }
                    throw ExitStatus.unavailable
                }
            }
            // A record that says tls=1 is a TLS listener; its certificate names the host, not the address
            // the browse resolved, so the host's published name is checked unless --server-name says otherwise.
            if instance.advertisement.tls {
                endpoint = .tls(host: instance.address, port: instance.port)
                tls.serverName = tls.serverName ?? instance.hostName
            } else {
                endpoint = try options.withTLSIfAsked(.tcp(host: instance.address, port: instance.port))
            }
        }
        if let api, endpoint == nil {
            // With --address, --api is checked against the server's own description before calling.
            let serviceName = String(method.prefix { $0 != "." })
            let document = try await options.withClient(method: "rpc.discover") { client throws(RPCClientError) in
                try await client.call("rpc.discover", timeout: timeout)
            }
            let fingerprint = ServiceListing.services(in: document).first { $0.name == serviceName }?.fingerprint
            guard fingerprint?.lowercased() == api.lowercased() else {
                Terminal.error(
                    "incompatible interface: --api \(api) asks for another interface of '\(serviceName)' than the server "
                        + "offers (\(fingerprint.map { "fingerprint \($0)" } ?? "no such service")); not calling it")
                throw ExitStatus.incompatible
            }
        }
        let result = try await options.withClient(method: method, endpoint: endpoint, tls: tls) { client throws(RPCClientError) in
            try await client.call(method, params: params, timeout: timeout)
        }
        print(options.json ? result.jsonText : result.prettyPrinted())
    }

    /// `--count`: one client that follows the discovered instances (`endpointLists`), `count` calls through it.
    private func repeated(service: String, method: String, params: JSONValue?) async throws {
        let discovery = lookup.discovery(service: service)
        let timeout = options.timeoutDuration
        let found = try await DiscoveryErrors.reporting(service: service, hint: lookup.hint) {
            try await InstanceCollector.collect(discovery, timeout: timeout).filter { ServiceFinder.matches($0, api: api) }
        }
        guard !found.isEmpty else {
            Terminal.error(ServiceFinder.Failure.notFound(service: service).description)
            throw ExitStatus.unavailable
        }
        let endpoints = found.compactMap { try? RPCEndpoint(parsing: $0.endpointText) }
        let client = RPCClient(
            configuration: .init(endpoints: endpoints, tls: options.tlsOptions, connections: max(2, endpoints.count), connectTimeout: timeout),
            endpointUpdates: discovery.endpointLists(fingerprint: api))
        let pause = Duration.milliseconds(Int64((interval * 1000).rounded()))
        let failed = try await withRPCClient(client) { client in
            var failed = 0
            for index in 0..<count {
                if index > 0, interval > 0 { try await Task.sleep(for: pause) }
                do {
                    let result = try await client.call(method, params: params, timeout: timeout)
                    print(options.json ? result.jsonText : result.prettyPrinted())
                } catch {
                    failed += 1
                    Terminal.error("\(method): call \(index + 1): \(error)")
                }
            }
            return failed
        }
        Terminal.note("\(count) calls, \(failed) failed")
        if failed > 0 { throw ExitStatus.remoteError }
    }
}
