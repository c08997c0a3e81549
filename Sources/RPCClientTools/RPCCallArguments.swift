import RPCClient
package import RPCJSON

/// Turns command-line words into JSON-RPC params, as `rpcctl call METHOD [ARG…]` does.
///
/// - `key=value` words make by-name params (an object);
/// - other words make by-position params (an array);
/// - a value is taken as JSON if it parses as JSON, else as a string: `n=3` → `3`, `name=bob` → `"bob"`,
///   `flag=true` → `true`, `s="3"` → `"3"`, `list=[1,2]` → `[1,2]`;
/// - mixing both forms, an empty key or a repeated key is an error.
package enum RPCCallArguments {
    /// An argument list that cannot be turned into params; `description` says why.
    package struct UsageError: Error, Hashable, Sendable, CustomStringConvertible {
        package var description: String
        package init(_ description: String) { self.description = description }
    }

    /// The params for `words`, or nil when there are none.
    package static func params(from words: [String]) throws(UsageError) -> JSONValue? {
        guard !words.isEmpty else { return nil }
        var named: [String: JSONValue] = [:]
        var positional: [JSONValue] = []
        var firstNamed: String?
        var firstPositional: String?
        for word in words {
            if let (key, text) = split(word) {
                guard !key.isEmpty else { throw UsageError("argument '\(word)' has an empty name before '='") }
                guard named[key] == nil else { throw UsageError("parameter '\(key)' is given more than once") }
                named[key] = Self.value(from: text)
                firstNamed = firstNamed ?? word
            } else {
                positional.append(Self.value(from: word))
                firstPositional = firstPositional ?? word
            }
        }
        if let firstNamed, let firstPositional {
            throw UsageError(
                "cannot mix by-name (\(firstNamed)) and by-position (\(firstPositional)) arguments; "
                    + "use --params for anything else")
        }
        return firstNamed != nil ? .object(named) : .array(positional)
    }

    /// Parses `--params JSON`: it must be a JSON array or object.
    package static func params(json text: String) throws(UsageError) -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text, maxDepth: 512)
        } catch {
            throw UsageError("--params is not valid JSON: \(error)")
        }
        switch value {
        case .array, .object: return value
        default: throw UsageError("--params must be a JSON array or object")
        }
    }

    /// A word's value: JSON if it parses, else the word as a string.
    package static func value(from text: String) -> JSONValue {
        (try? JSONValue(parsing: text, maxDepth: 512)) ?? .string(text)
    }

    /// `key=value` with a key that looks like a parameter name; nil for a positional word. A word whose text
    /// before `=` is not a plain name (it starts with a JSON character such as `{`, `[` or `"`) is positional,
    /// so `'{"a":"b=c"}'` stays one JSON value.
    private static func split(_ word: String) -> (key: String, value: String)? {
        guard let equals = word.firstIndex(of: "=") else { return nil }
        let key = word[..<equals]
        if let first = key.first, "{[\"".contains(first) { return nil }
        if key.contains(where: { $0 == " " || $0 == ":" || $0 == "," }) { return nil }
        return (String(key), String(word[word.index(after: equals)...]))
    }
}
