/// The Prometheus text exposition format, version 0.0.4, written from rpcd's registry: `# HELP` and `# TYPE`
/// per family, then one line per sample; histograms as cumulative `_bucket{le=...}` lines, `_sum` and `_count`.
extension RPCMetricRegistry {
    /// Every family of `families` that has a series, in that order. Each series' labels are written once and
    /// reused for its histogram lines (a scrape of a few dozen methods writes about a thousand lines).
    package func write(_ families: [RPCMetricFamily], into text: inout String) {
        for family in families {
            let entries = self.entries(family)
            guard !entries.isEmpty else { continue }
            Self.header(family, into: &text)
            for entry in entries {
                // `key="value",...` without braces: a histogram's lines add `le` after it.
                var labels = ""
                for (index, (key, value)) in zip(family.labels, entry.labels).enumerated() {
                    if index > 0 { labels += "," }
                    labels += key + "=\"" + escaped(value) + "\""
                }
                switch entry.series {
                case .counter(let counter): Self.line(family.name, labels, counter.value, into: &text)
                case .gauge(let gauge): Self.line(family.name, labels, gauge.value, into: &text)
                case .countedElsewhere(let value), .measuredElsewhere(let value):
                    Self.line(family.name, labels, value(), into: &text)
                case .histogram(let histogram):
                    let snapshot = histogram.snapshot
                    let bucket = family.name + "_bucket{" + labels + (labels.isEmpty ? "le=\"" : ",le=\"")
                    for (bound, cumulative) in zip(histogram.boundLabels, snapshot.buckets) {
                        text += bucket + bound + "\"} " + String(cumulative.count) + "\n"
                    }
                    text += bucket + "+Inf\"} " + String(snapshot.count) + "\n"
                    text += family.name + "_sum" + (labels.isEmpty ? "" : "{" + labels + "}") + " "
                        + RPCDurationHistogram.seconds(snapshot.sumNanoseconds) + "\n"
                    Self.line(family.name + "_count", labels, snapshot.count, into: &text)
                }
            }
        }
    }

    static func header(_ family: RPCMetricFamily, into text: inout String) {
        text += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind.rawValue)\n"
    }

    /// `name{labels} value`, `labels` already written (`key="value",...`).
    private static func line(_ name: String, _ labels: String, _ value: Int, into text: inout String) {
        text += name
        if !labels.isEmpty { text += "{" + labels + "}" }
        text += " " + String(value) + "\n"
    }

    /// `name value`, for a series without labels (the process metrics).
    static func sample(_ name: String, _ value: Double, into text: inout String) {
        text += name + " " + String(value) + "\n"
    }

    /// A label value with `\`, `"` and line feeds escaped, as the format asks.
    private func escaped(_ value: String) -> String {
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
}
