/// The Prometheus text exposition format, version 0.0.4, written from rpcd's registry: `# HELP` and `# TYPE`
/// per family, then one line per sample; histograms as cumulative `_bucket{le=...}` lines, `_sum` and `_count`.
extension RPCMetricRegistry {
    /// Every family of `families` that has a series, in that order.
    package func write(_ families: [RPCMetricFamily], into text: inout String) {
        for family in families {
            let entries = self.entries(family)
            guard !entries.isEmpty else { continue }
            Self.header(family, into: &text)
            for entry in entries {
                let labels = zip(family.labels, entry.labels).map { ($0, $1) }
                switch entry.series {
                case .counter(let counter): Self.sample(family.name, labels, "\(counter.value)", into: &text)
                case .gauge(let gauge): Self.sample(family.name, labels, "\(gauge.value)", into: &text)
                case .countedElsewhere(let value), .measuredElsewhere(let value):
                    Self.sample(family.name, labels, "\(value())", into: &text)
                case .histogram(let histogram):
                    let snapshot = histogram.snapshot
                    for (bound, bucket) in zip(histogram.bounds, snapshot.buckets) {
                        Self.sample(family.name + "_bucket", labels + [("le", Self.seconds(bound))], "\(bucket.count)", into: &text)
                    }
                    Self.sample(family.name + "_bucket", labels + [("le", "+Inf")], "\(snapshot.count)", into: &text)
                    Self.sample(family.name + "_sum", labels, "\(snapshot.sumSeconds)", into: &text)
                    Self.sample(family.name + "_count", labels, "\(snapshot.count)", into: &text)
                }
            }
        }
    }

    static func header(_ family: RPCMetricFamily, into text: inout String) {
        text += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind.rawValue)\n"
    }

    static func sample(_ name: String, _ labels: [(String, String)], _ value: String, into text: inout String) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (index, (key, value)) in labels.enumerated() {
                if index > 0 { text += "," }
                text += key + "=\"" + escaped(value) + "\""
            }
            text += "}"
        }
        text += " " + value + "\n"
    }

    /// A label value with `\`, `"` and line feeds escaped, as the format asks.
    static func escaped(_ value: String) -> String {
        guard value.contains(where: { $0 == "\\" || $0 == "\"" || $0 == "\n" }) else { return value }
        var result = ""
        for character in value {
            switch character {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            default: result.append(character)
            }
        }
        return result
    }

    /// A bound in nanoseconds as seconds in decimal (`0.00001`, `2.5`, `10`): exact, no exponent.
    static func seconds(_ nanoseconds: Int64) -> String {
        let whole = nanoseconds / 1_000_000_000
        var fraction = String(nanoseconds % 1_000_000_000)
        guard fraction != "0" else { return "\(whole)" }
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction)"
    }
}
