import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import RPCDiscovery
import RPCDNSSD
import RPCJSON

struct BrowseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "browse",
        abstract: "List rpcd services advertised on the local network (DNS-SD over Avahi).",
        discussion: """
            Browses _rpcd._tcp, or with SERVICE its subtype _SERVICE._sub._rpcd._tcp, and resolves every instance. \
            One line per instance: service, instance name, host, address:port, version, interface fingerprint. \
            Without --watch rpcctl prints what the network answers within --timeout seconds and exits; with \
            --watch it prints "+" and "-" lines as instances appear and disappear until interrupted. With --json: \
            an array of {service, name, host, address, port, version, fingerprint, protocol}, or with --watch one \
            such object per line with "event": "appeared", "updated" or "disappeared". Needs avahi-daemon, \
            except with --domain DOMAIN, which browses that unicast DNS domain (wide-area DNS-SD: the same \
            records, published by rpcd's [WideArea] section) through the DNS servers of /etc/resolv.conf or \
            --dns-server, asking again every second.
            """)

    @Argument(help: "Only instances of this service (an RFC 6335 name such as calc).")
    var service: String?

    @Flag(name: .long, help: "Keep browsing and print instances as they appear and disappear.")
    var watch = false

    @Flag(name: .long, help: "Machine output: JSON on stdout.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("Without --watch: seconds to wait for answers at most.", valueName: "seconds"))
    var timeout: Double = 5

    @OptionGroup var lookup: DiscoveryOptions

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
        if let service {
            do { try DNSSDName.validateServiceName(service) } catch { throw ValidationError("\(error)") }
        }
    }

    func run() async throws {
        let discovery = lookup.discovery(service: service)
        if watch {
            try await DiscoveryErrors.reporting(service: service, hint: lookup.hint) {
                for try await event in discovery { show(event) }
            }
            return
        }
        let instances = try await DiscoveryErrors.reporting(service: service, hint: lookup.hint) {
            try await InstanceCollector.collect(discovery, timeout: .milliseconds(Int64(timeout * 1000)))
        }
        if json {
            Terminal.printJSON(.array(instances.map { $0.json() }))
        } else {
            Swift.print(InstanceCollector.table(instances), terminator: "")
        }
    }

    private func show(_ event: RPCDiscoveryEvent) {
        let (mark, name, instance): (String, String, RPCDiscoveredInstance)
        switch event {
        case .appeared(let value): (mark, name, instance) = ("+", "appeared", value)
        case .updated(let value): (mark, name, instance) = ("~", "updated", value)
        case .disappeared(let value): (mark, name, instance) = ("-", "disappeared", value)
        case .settled: return
        }
        if json {
            Terminal.printJSON(instance.json(event: name))
        } else {
            Swift.print(mark + " " + InstanceCollector.row(instance).joined(separator: "  "))
        }
        fflush(nil as UnsafeMutablePointer<FILE>?)  // a pipe would otherwise hold the line until the buffer fills
    }
}

/// Turns discovery failures into rpcctl's errors: no avahi-daemon (or DNS server) is "unavailable" (69), with a
/// hint (`DiscoveryOptions.hint`).
enum DiscoveryErrors {
    static func reporting<T>(service: String?, hint: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ExitCode {
            throw error
        } catch {
            let what = service.map { "cannot browse for \($0)" } ?? "cannot browse"
            Terminal.error("\(what): \(error) (\(hint))")
            throw ExitStatus.unavailable
        }
    }
}

/// Gathering and printing instances for `browse` and `call --service`.
enum InstanceCollector {
    /// Every instance reported until the browse settles or `timeout` passes, deduplicated by name and address.
    static func collect(_ discovery: RPCServiceDiscovery, timeout: Duration) async throws -> [RPCDiscoveredInstance] {
        try await firstResult(within: timeout) {
            var current: [String: RPCDiscoveredInstance] = [:]
            for try await event in discovery {
                switch event {
                case .appeared(let instance), .updated(let instance): current[key(instance)] = instance
                case .disappeared(let instance): current[key(instance)] = nil
                case .settled: return sorted(Array(current.values))
                }
            }
            return sorted(Array(current.values))
        } ?? []
    }

    /// What `body` returns, or nil when `timeout` passes first (then `body` is cancelled, which stops browsing).
    static func firstResult<T: Sendable>(within timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    static func key(_ instance: RPCDiscoveredInstance) -> String { instance.name + "\u{0}" + instance.endpointText }

    static func sorted(_ instances: [RPCDiscoveredInstance]) -> [RPCDiscoveredInstance] {
        instances.sorted { ($0.service, $0.name, $0.endpointText) < ($1.service, $1.name, $1.endpointText) }
    }

    static func row(_ instance: RPCDiscoveredInstance) -> [String] {
        [instance.service, "'\(instance.name)'", instance.hostName, instance.endpointText, instance.version, instance.fingerprint]
    }

    /// Aligned columns with a header; "(no rpcd services found)" when empty.
    static func table(_ instances: [RPCDiscoveredInstance]) -> String {
        guard !instances.isEmpty else { return "(no rpcd services found)\n" }
        let rows = [["SERVICE", "INSTANCE", "HOST", "ADDRESS", "VERSION", "FINGERPRINT"]] + instances.map(row)
        let widths = (0..<6).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { $1 + String(repeating: " ", count: widths[$0] - $1.count) }
                .joined(separator: "  ").trimmingTrailingSpaces()
        }.joined(separator: "\n") + "\n"
    }
}

extension RPCDiscoveredInstance {
    func json(event: String? = nil) -> JSONValue {
        var object: [String: JSONValue] = [
            "service": .string(service), "name": .string(name), "host": .string(hostName), "address": .string(address),
            "port": .number(port), "version": .string(version), "fingerprint": .string(fingerprint),
            "protocol": .number(advertisement.protocolVersion), "tls": .bool(advertisement.tls),
        ]
        if let event { object["event"] = .string(event) }
        return .object(object)
    }
}

extension String {
    /// The text without the blanks that padding left at its end.
    func trimmingTrailingSpaces() -> String {
        String(self[..<(lastIndex { $0 != " " }.map(index(after:)) ?? startIndex)])
    }
}
