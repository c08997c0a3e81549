package import RPCJSON

/// What `rpcctl top` shows: two `rpcd.metrics` snapshots taken `interval` seconds apart, made into lines of at
/// most `width` columns (80 by default). Rates are the growth of the counters between the snapshots; p50 and
/// p99 come from the growth of each method's latency histogram (interpolated within a bucket, as Prometheus's
/// `histogram_quantile` does), so they describe the last interval, not the whole run. A pure function of its
/// input, so it is tested without a daemon or a terminal.
package struct TopScreen {
    /// The column the method table is sorted by (key `s` cycles through them).
    package enum Sort: String, CaseIterable, Sendable {
        case calls, errors, p99, name

        package var next: Sort {
            let all = Sort.allCases
            return all[(all.firstIndex(of: self)! + 1) % all.count]
        }
    }

    /// One method's figures over the interval.
    package struct MethodRow: Equatable, Sendable {
        package var name: String
        package var callsPerSecond: Double
        package var errorsPerSecond: Double
        package var p50: Double?
        package var p99: Double?
        package var total: Int
    }

    package var previous: JSONValue?
    package var current: JSONValue
    package var interval: Double
    package var sort: Sort
    package var width: Int
    /// Lines of the method table at most (a terminal's height less the rest); nil: all.
    package var maxMethods: Int?

    package init(previous: JSONValue?, current: JSONValue, interval: Double, sort: Sort = .calls, width: Int = 80,
                maxMethods: Int? = nil) {
        self.previous = previous
        self.current = current
        self.interval = max(interval, 0.001)
        self.sort = sort
        self.width = width
        self.maxMethods = maxMethods
    }

    package var lines: [String] {
        var lines: [String] = []
        let methods = methodRows()
        let callRate = methods.reduce(0) { $0 + $1.callsPerSecond }
        let errorRate = methods.reduce(0) { $0 + $1.errorsPerSecond }
        let uptime = current["uptime_seconds"]?.doubleValue ?? 0
        let rss = current["process"]?["resident_memory_bytes"]?.doubleValue ?? 0
        let cpu = rate(current["process"]?["cpu_seconds"], previous?["process"]?["cpu_seconds"])
        lines.append(
            "rpcd \(text(current["version"]))  up \(Self.duration(uptime))  \(Self.fixed(callRate, 1)) calls/s  "
                + "\(Self.fixed(errorRate, 1)) err/s  in flight \(current["calls_in_flight"]?.intValue ?? 0)  "
                + "cpu \(Self.fixed(cpu * 100, 0))%  rss \(Self.bytes(rss))")
        if current["metrics"] == .bool(false) { lines.append("metrics are off (Metrics=no): calls are counted, not timed (no p50, p99)") }
        lines.append("")
        lines.append(row(["METHOD", "CALLS/S", "ERR/S", "P50 ms", "P99 ms", "TOTAL"], [-28, 9, 8, 9, 9, 11]))
        // Methods never called are left out: a screen has room for what is happening.
        var shown = sorted(methods.filter { $0.total > 0 })
        if let maxMethods, shown.count > maxMethods { shown = Array(shown.prefix(maxMethods)) }
        for method in shown {
            lines.append(row(
                [method.name, Self.fixed(method.callsPerSecond, 1), Self.fixed(method.errorsPerSecond, 1),
                 method.p50.map { Self.fixed($0 * 1000, 3) } ?? "-", method.p99.map { Self.fixed($0 * 1000, 3) } ?? "-",
                 "\(method.total)"],
                [-28, 9, 8, 9, 9, 11]))
        }
        lines.append("")
        lines.append(row(["LISTENER", "OPEN", "ACCEPT/S", "REFUSED", "IN KB/s", "OUT KB/s"], [-28, 7, 9, 9, 10, 11]))
        for listener in current["listeners"]?.arrayValue ?? [] {
            let name = text(listener["listener"])
            let before = previous?["listeners"]?.arrayValue?.first { $0["listener"] == listener["listener"] }
            lines.append(row(
                [name, "\(listener["open"]?.intValue ?? 0)", Self.fixed(rate(listener["accepted"], before?["accepted"]), 1),
                 "\(listener["refused"]?.intValue ?? 0)",
                 Self.fixed(rate(listener["received_bytes"], before?["received_bytes"]) / 1000, 1),
                 Self.fixed(rate(listener["sent_bytes"], before?["sent_bytes"]) / 1000, 1)],
                [-28, 7, 9, 9, 10, 11]))
        }
        lines.append("")
        let budget = current["budget"]
        lines.append(row(
            ["PEER (heaviest first)", "HELD KB", "CONNS", "CALLS/S", "of \(Self.bytes(budget?["limit"]?.doubleValue ?? 0))"],
            [-28, 10, 7, 10, 19]))
        if current["peers"] == nil {
            // rpcd names peers to administrators only (docs/SECURITY.md): the others see the aggregate.
            lines.append(
                "  \(budget?["peers"]?.intValue ?? 0) peers, the heaviest holds "
                    + "\(Self.fixed((budget?["largest_peer_bytes"]?.doubleValue ?? 0) / 1000, 1)) KB (names: administrators only)")
        }
        let peers = (current["peers"]?.arrayValue ?? []).sorted {
            ($0["buffered_bytes"]?.doubleValue ?? 0) > ($1["buffered_bytes"]?.doubleValue ?? 0)
        }
        for peer in peers {
            let before = previous?["peers"]?.arrayValue?.first { $0["peer"] == peer["peer"] }
            lines.append(row(
                [text(peer["peer"]), Self.fixed((peer["buffered_bytes"]?.doubleValue ?? 0) / 1000, 1),
                 "\(peer["connections"]?.intValue ?? 0)", Self.fixed(rate(peer["calls"], before?["calls"]), 1), ""],
                [-28, 10, 7, 10, 19]))
        }
        lines.append("")
        let events = current["events"]
        lines.append(
            "events: \(Self.fixed(rate(events?["published"], previous?["events"]?["published"]), 1)) published/s, "
                + "\(Self.fixed(rate(events?["delivered"], previous?["events"]?["delivered"]), 1)) delivered/s, "
                + "\(events?["lost"]?.intValue ?? 0) lost, \(events?["subscriptions"]?.intValue ?? 0) subscriptions")
        let handlers = (current["handlers"]?.arrayValue ?? []).map { handler -> String in
            let host = handler["host"]
            let state = (host?["state"]?.stringValue ?? "?").prefix { $0 != ":" }
            let restarts = host?["restarts"]?.intValue ?? 0
            return "\(text(handler["service"])) \(state)" + (restarts > 0 ? " (\(restarts) restarts)" : "")
        }
        if !handlers.isEmpty { lines.append("handlers: " + handlers.joined(separator: ", ")) }
        return lines.map { String($0.prefix(width)) }
    }

    /// Every method's figures over the interval, unsorted.
    package func methodRows() -> [MethodRow] {
        (current["methods"]?.arrayValue ?? []).map { method in
            let service = text(method["service"]), name = text(method["method"])
            let before = previous?["methods"]?.arrayValue?.first {
                $0["service"] == method["service"] && $0["method"] == method["method"]
            }
            let calls = rate(method["calls"], before?["calls"])
            let ok = rate(method["outcomes"]?["ok"], before?["outcomes"]?["ok"])
            let buckets = Self.bucketGrowth(method["duration_buckets"], before?["duration_buckets"])
            return MethodRow(
                name: service.hasPrefix("(") ? "\(service) \(name)" : "\(service).\(name)",
                callsPerSecond: calls, errorsPerSecond: max(0, calls - ok),
                p50: Self.quantile(0.5, buckets), p99: Self.quantile(0.99, buckets),
                total: method["calls"]?.intValue ?? 0)
        }
    }

    private func sorted(_ rows: [MethodRow]) -> [MethodRow] {
        rows.sorted { a, b in
            switch sort {
            case .calls: (a.callsPerSecond, a.total, b.name) > (b.callsPerSecond, b.total, a.name)
            case .errors: (a.errorsPerSecond, a.callsPerSecond, b.name) > (b.errorsPerSecond, b.callsPerSecond, a.name)
            case .p99: (a.p99 ?? -1, a.callsPerSecond, b.name) > (b.p99 ?? -1, b.callsPerSecond, a.name)
            case .name: a.name < b.name
            }
        }
    }

    /// Per second, between two counter readings; a counter that went down (a restart) counts from zero.
    private func rate(_ now: JSONValue?, _ before: JSONValue?) -> Double {
        let now = now?.doubleValue ?? 0
        let before = before?.doubleValue ?? 0
        return (now >= before ? now - before : now) / interval
    }

    /// `[[upper bound, cumulative count], ...]` grown between two snapshots.
    static func bucketGrowth(_ now: JSONValue?, _ before: JSONValue?) -> [(bound: Double, count: Double)] {
        let earlier = Dictionary(
            (before?.arrayValue ?? []).compactMap { pair -> (Double, Double)? in
                guard let bound = pair.arrayValue?.first?.doubleValue, let count = pair.arrayValue?.last?.doubleValue else {
                    return nil
                }
                return (bound, count)
            }, uniquingKeysWith: { $1 })
        return (now?.arrayValue ?? []).compactMap { pair in
            guard let bound = pair.arrayValue?.first?.doubleValue, let count = pair.arrayValue?.last?.doubleValue else {
                return nil
            }
            return (bound, max(0, count - (earlier[bound] ?? 0)))
        }
    }

    /// The `q` quantile of cumulative `buckets`, interpolated linearly within its bucket; nil without calls.
    /// Past the last finite bound, the last bound (what a histogram can tell).
    static func quantile(_ q: Double, _ buckets: [(bound: Double, count: Double)]) -> Double? {
        guard let total = buckets.last?.count, total > 0 else { return nil }
        let rank = q * total
        var lowerBound = 0.0, lowerCount = 0.0
        for bucket in buckets {
            if bucket.count >= rank {
                let inBucket = bucket.count - lowerCount
                guard inBucket > 0 else { return bucket.bound }
                return lowerBound + (bucket.bound - lowerBound) * (rank - lowerCount) / inBucket
            }
            (lowerBound, lowerCount) = (bucket.bound, bucket.count)
        }
        return buckets.last?.bound
    }

    private func row(_ cells: [String], _ widths: [Int]) -> String {
        zip(cells, widths).map { cell, width in
            let size = abs(width)
            let clipped = cell.count > size ? String(cell.prefix(size - 1)) + "…" : cell
            let padding = String(repeating: " ", count: max(0, size - clipped.count))
            return width < 0 ? clipped + padding : padding + clipped
        }.joined(separator: " ")
    }

    private func text(_ value: JSONValue?) -> String {
        guard let value else { return "?" }
        return value.stringValue ?? value.jsonText
    }

    static func fixed(_ value: Double, _ digits: Int) -> String {
        FixedPointText.text(value, digits: digits)
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds)
        if total < 3600 { return "\(total / 60)m\(String(format2: total % 60))s" }
        return "\(total / 3600)h\(String(format2: total / 60 % 60))m"
    }

    static func bytes(_ value: Double) -> String {
        if value >= 1_073_741_824 { return fixed(value / 1_073_741_824, 1) + "G" }
        if value >= 1_048_576 { return fixed(value / 1_048_576, 1) + "M" }
        return fixed(value / 1024, 1) + "K"
    }
}

extension String {
    /// Two digits, zero-padded.
    fileprivate init(format2 value: Int) {
        self = value < 10 ? "0\(value)" : "\(value)"
    }
}
