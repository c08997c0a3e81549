import RPCBinding
import RPCConfig
import RPCJSON

extension HandlerConfiguration {
    /// Throws for the first `[Config]` value that does not match what the module declares for its key
    /// (`rpcd_module.config_params`, the Swift SDK's `config`), naming the file and line as a `[Handler]` value
    /// does. The INI text is read as the schema's `type` says — an integer or a number in decimal, a boolean as
    /// systemd's (yes/no, true/false, on/off, 1/0), a string as written — then held to its `enum`, `minimum`
    /// and `maximum`. Keys without a declaration, and empty assignments (a reset), are not checked. Runs where
    /// the keys are checked: `rpcd --check-config`, and every start before the module's `init`.
    func checkConfigValues(against declared: [RPCParam]) throws(ConfigError) {
        guard !declared.isEmpty else { return }
        let schemas = Dictionary(declared.map { ($0.name, $0.schema) }, uniquingKeysWith: { first, _ in first })
        for entry in configEntries where !entry.value.isEmpty {
            guard let schema = schemas[entry.key] else { continue }
            if let problem = Self.problem(entry, schema) { throw entry.invalidValue(expected: problem) }
        }
    }

    /// What is wrong with `entry`'s value as a value of `schema`, as "expected ..."; nil when nothing is.
    private static func problem(_ entry: INIEntry, _ schema: JSONValue) -> String? {
        let text = entry.value
        let type = schema["type"]?.stringValue
        let value: JSONValue
        switch type {
        case "integer":
            guard let number = Int(text) else { return "expected an integer\(range(schema))" }
            value = .number(number)
        case "number":
            guard let number = Double(text), number.isFinite else { return "expected a number\(range(schema))" }
            value = .number(number)
        case "boolean":
            guard let flag = try? entry.boolValue() else { return "expected a boolean (yes or no)" }
            value = .bool(flag)
        default:
            value = .string(text)
        }
        if let choices = schema["enum"]?.arrayValue, !choices.contains(value) {
            return "expected one of " + choices.map { $0.stringValue ?? $0.jsonText }.joined(separator: ", ")
        }
        if let number = value.doubleValue {
            let noun = type == "integer" ? "an integer" : "a number"
            if let minimum = schema["minimum"]?.doubleValue, number < minimum { return "expected \(noun)\(range(schema))" }
            if let maximum = schema["maximum"]?.doubleValue, number > maximum { return "expected \(noun)\(range(schema))" }
        }
        return nil
    }

    /// " from 1 to 100", " of at least 1", " of at most 100", or "".
    private static func range(_ schema: JSONValue) -> String {
        let minimum = schema["minimum"]?.jsonText
        let maximum = schema["maximum"]?.jsonText
        switch (minimum, maximum) {
        case (let low?, let high?): return " from \(low) to \(high)"
        case (let low?, nil): return " of at least \(low)"
        case (nil, let high?): return " of at most \(high)"
        case (nil, nil): return ""
        }
    }
}
