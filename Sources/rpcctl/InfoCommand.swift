import ArgumentParser
import RPCClient
import RPCJSON

struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the daemon's version, uptime, listeners, services and counters (rpcd.info).",
        discussion: "With --json: the rpcd.info result unchanged.")

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let timeout = options.timeoutDuration
        let info = try await options.withClient(method: "rpcd.info") { client throws(RPCClientError) in
            try await client.call("rpcd.info", timeout: timeout)
        }
        if options.json {
            Terminal.printJSON(info)
        } else {
            print(Self.render(info), terminator: "")
        }
    }

    static func render(_ info: JSONValue) -> String {
        func text(_ value: JSONValue?) -> String {
            guard let value else { return "?" }
            return value.stringValue ?? value.jsonText
        }
        var lines: [String] = []
        var title = "rpcd \(text(info["version"]))"
        if let proto = info["protocol"] { title += ", protocol \(text(proto))" }
        if let swift = info["swift_runtime"] { title += ", Swift \(text(swift))" }
        if let pid = info["pid"] { title += ", pid \(text(pid))" }
        lines.append(title)
        if let uptime = info["uptime_seconds"]?.doubleValue {
            var line = "uptime:      \(duration(uptime))"
            if let started = info["started"]?.stringValue { line += " (since \(started))" }
            lines.append(line)
        }
        if let listeners = info["listeners"]?.arrayValue {
            lines.append("listeners:   " + (listeners.isEmpty ? "none" : listeners.map { text($0) }.joined(separator: ", ")))
        }
        if let services = info["services"]?.arrayValue {
            lines.append("services:    \(services.count)")
            for service in services {
                var line = "  \(text(service["name"])) \(text(service["version"]))"
                if let methods = service["methods"] {
                    let count = methods.intValue ?? methods.arrayValue?.count
                    if let count { line += ", \(count) method\(count == 1 ? "" : "s")" }
                }
                if let count = service["events"]?.intValue, count > 0 { line += ", \(count) event\(count == 1 ? "" : "s")" }
                if let fingerprint = service["fingerprint"]?.stringValue { line += ", fingerprint \(fingerprint)" }
                lines.append(line)
            }
        }
        if let connections = info["connections"] {
            lines.append(
                "connections: \(text(connections["open"])) open, \(text(connections["accepted"])) accepted, "
                    + "\(text(connections["rejected"])) rejected")
        }
        if let limits = info["limits"] {
            lines.append(
                "limits:      frames up to \(text(limits["max_frame_size"])) bytes, "
                    + "\(text(limits["max_calls_per_connection"])) calls in flight per connection")
        }
        if let calls = info["calls"] {
            lines.append("calls:       \(text(calls["total"])) total, \(text(calls["errors"])) errors")
        }
        if let events = info["events"] {
            lines.append(
                "events:      \(text(events["subscriptions"])) subscriptions, \(text(events["published"])) published, "
                    + "\(text(events["delivered"])) delivered, \(text(events["lost"])) lost")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `3d 4h 5m 6s`, leaving out leading zero units; under a minute with one decimal.
    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return Terminal.format(seconds, digits: 1) + "s" }
        var rest = Int(seconds)
        let days = rest / 86_400
        rest %= 86_400
        let hours = rest / 3600
        rest %= 3600
        let minutes = rest / 60
        let secs = rest % 60
        var parts: [String] = []
        if days > 0 { parts.append("\(days)d") }
        if days > 0 || hours > 0 { parts.append("\(hours)h") }
        parts.append("\(minutes)m")
        parts.append("\(secs)s")
        return parts.joined(separator: " ")
    }
}
