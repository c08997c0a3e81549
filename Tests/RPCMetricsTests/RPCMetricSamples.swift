/// The samples of a Prometheus text exposition, read back: how the tests check what a scrape gets (rpcd itself
/// reads its series directly, `RPCMetrics.snapshot()`). Only what rpcd's exposition writes is understood: one
/// sample a line, `name{label="value",...} number`, with `\\`, `\"` and `\n` escaped in values.
struct RPCMetricSamples: Sendable {
    struct Sample: Sendable, Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    private(set) var samples: [Sample] = []

    init(exposition: String) {
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            if let sample = Self.parse(line) { samples.append(sample) }
        }
    }

    /// The sum of `name`'s samples whose labels include `matching`.
    func sum(_ name: String, _ matching: [String: String] = [:]) -> Double {
        samples.reduce(0) { total, sample in
            guard sample.name == name, matching.allSatisfy({ sample.labels[$0.key] == $0.value }) else { return total }
            return total + sample.value
        }
    }

    /// `name`'s samples whose labels include `matching`.
    func series(_ name: String, _ matching: [String: String] = [:]) -> [Sample] {
        samples.filter { sample in sample.name == name && matching.allSatisfy { sample.labels[$0.key] == $0.value } }
    }

    private static func parse(_ line: Substring) -> Sample? {
        var labels: [String: String] = [:]
        let name: Substring
        var rest: Substring
        if let brace = line.firstIndex(of: "{") {
            name = line[..<brace]
            rest = line[line.index(after: brace)...]
            while let equals = rest.firstIndex(of: "=") {
                let key = String(rest[..<equals].drop { $0 == "," })
                rest = rest[rest.index(equals, offsetBy: 2)...]  // past ="
                var value = ""
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        value.append(character == "n" ? "\n" : character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
                labels[key] = value
                if rest.first == "}" { break }
            }
            guard let close = rest.firstIndex(of: "}") else { return nil }
            rest = rest[rest.index(after: close)...]
        } else {
            guard let space = line.firstIndex(of: " ") else { return nil }
            name = line[..<space]
            rest = line[space...]
        }
        let number = rest.drop { $0 == " " }.prefix { $0 != " " }
        let value: Double? = switch number {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        default: Double(number)
        }
        guard let value else { return nil }
        return Sample(name: String(name), labels: labels, value: value)
    }
}
