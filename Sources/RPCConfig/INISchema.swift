/// What the assignments of a set of INI documents mean: the known sections, their keys, and the
/// defaults that assignments modify. Used for rpcd.conf (`ServerConfiguration.schema`) and meant
/// for any later file in the same syntax.
///
/// Applying documents walks their entries in order (main file, then drop-ins), so later
/// assignments override earlier ones. Sections and keys whose names start with `X-` are ignored,
/// as systemd ignores them in unit files; any other unknown section or key is an error naming the
/// file and line (with a "did you mean" hint when a known name is close).
package struct INISchema<Settings: Sendable>: Sendable {
    package var defaults: Settings
    package var sections: [INISection<Settings>]

    package init(defaults: Settings, sections: [INISection<Settings>]) {
        self.defaults = defaults
        self.sections = sections
    }

    /// The defaults with every assignment of `documents` applied in order.
    ///
    /// Problems are reported in file order: within a document, a section header is checked
    /// before the assignments that follow it.
    package func settings(from documents: [INIDocument]) throws(ConfigError) -> Settings {
        var settings = defaults
        var assigned: Set<String> = []  // "Section\0Key" of keys assigned so far
        for document in documents {
            var headers = document.sectionHeaders[...]
            for entry in document.entries {
                while let header = headers.first, header.line <= entry.line {
                    try checkSection(header.name, file: header.file, line: header.line)
                    headers = headers.dropFirst()
                }
                // Documents built in code may lack headers, so the section is checked here too.
                guard let section = try checkSection(entry.section, file: entry.file, line: entry.line),
                    !entry.key.hasPrefix("X-")
                else { continue }
                guard let key = section.key(named: entry.key) else {
                    throw entry.unknownKey(in: section.name, known: section.keys.map(\.name))
                }
                let first = assigned.insert(section.name + "\0" + key.name).inserted
                try key.apply(&settings, entry, INIAssignmentContext(defaults: defaults, isFirstAssignment: first))
            }
            for header in headers { try checkSection(header.name, file: header.file, line: header.line) }
        }
        return settings
    }

    /// The section called `name`; nil for an ignored `X-` section; throws for an unknown one.
    @discardableResult
    private func checkSection(_ name: String, file: String, line: Int) throws(ConfigError) -> INISection<Settings>? {
        if name.hasPrefix("X-") { return nil }
        if let section = sections.first(where: { $0.name == name }) { return section }
        let known = sections.map(\.name)
        let hint = suggestion(for: name, among: known, bracketed: true)
            ?? "; known sections: " + known.map { "[\($0)]" }.joined(separator: ", ")
        throw ConfigError(file: file, line: line, message: "unknown section [\(name)]\(hint)")
    }

    /// `settings` as INI text with every key of every section, in schema order: one `[Section]`
    /// block per section that has keys, blank lines between them. Parsing the text with this schema gives
    /// `settings` back, provided no value ends in a backslash (which INI cannot express).
    package func render(_ settings: Settings) -> String {
        var blocks: [String] = []
        for section in sections where !section.keys.isEmpty {
            var lines = ["[\(section.name)]"]
            for key in section.keys {
                lines += key.render(settings).map { "\(key.name)=\($0)" }
            }
            blocks.append(lines.joined(separator: "\n") + "\n")
        }
        return blocks.joined(separator: "\n")
    }
}

/// One `[Section]` of a schema: its name and its keys, in the order `render` writes them.
package struct INISection<Settings: Sendable>: Sendable {
    package var name: String
    package var keys: [INIKey<Settings>]

    package init(_ name: String, keys: [INIKey<Settings>]) {
        self.name = name
        self.keys = keys
    }

    /// Key names are case-sensitive, as in systemd.
    package func key(named name: String) -> INIKey<Settings>? {
        keys.first { $0.name == name }
    }
}

/// What a key handler knows besides the assignment itself.
package struct INIAssignmentContext<Settings> {
    /// The schema's defaults: an empty assignment resets a key to its value here.
    package let defaults: Settings
    /// Whether no earlier assignment (in any document of this load) set this key. List keys use it
    /// to start from an empty list rather than from the defaults.
    package let isFirstAssignment: Bool
}

/// One key: how an assignment changes the settings, and how the settings are written back as the
/// values of `Key=` lines (several for lists). Build keys with the factory methods in
/// INIKey+Factories.swift, or directly for unusual value types.
package struct INIKey<Settings: Sendable>: Sendable {
    package typealias Apply = @Sendable (
        _ settings: inout Settings, _ entry: INIEntry, _ context: INIAssignmentContext<Settings>
    ) throws(ConfigError) -> Void
    package typealias Render = @Sendable (_ settings: Settings) -> [String]

    package var name: String
    package var apply: Apply
    package var render: Render

    package init(_ name: String, apply: @escaping Apply, render: @escaping Render) {
        self.name = name
        self.apply = apply
        self.render = render
    }
}

extension INIEntry {
    /// "unknown key 'K' in section [S]", with "did you mean" when a name of `known` is close: for keys of a
    /// schema and for keys a module declares (`[Config]`) alike.
    package func unknownKey(in section: String, known: [String]) -> ConfigError {
        let hint = suggestion(for: key, among: known, bracketed: false) ?? ""
        return error("unknown key '\(key)' in section [\(section)]\(hint)")
    }
}

/// "; did you mean 'Listen'?" when a known name differs only in case or by a couple of typos.
private func suggestion(for name: String, among known: [String], bracketed: Bool) -> String? {
    let lowered = name.lowercased()
    let length = lowered.unicodeScalars.count
    let scored = known.compactMap { candidate -> (String, Int)? in
        // The distance is at least the difference in length, and only 2 or less earns a suggestion: a long
        // unknown name costs no quadratic comparison with every key.
        let other = candidate.lowercased()
        guard abs(other.unicodeScalars.count - length) <= 2 else { return nil }
        return (candidate, editDistance(lowered, other))
    }
    // Short names are a couple of edits away from anything; only suggest a real resemblance.
    guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2, best.1 * 2 < best.0.count else { return nil }
    return bracketed ? "; did you mean [\(best.0)]?" : "; did you mean '\(best.0)'?"
}

/// Levenshtein distance over Unicode scalars; names are short, so the quadratic cost is nothing.
private func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a.unicodeScalars)
    let b = Array(b.unicodeScalars)
    // previous[j] is the distance between the prefix of `a` handled so far and b[..<j].
    var previous = Array(0...b.count)
    var current = previous
    for (i, scalarA) in a.enumerated() {
        current[0] = i + 1
        for (j, scalarB) in b.enumerated() {
            current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (scalarA == scalarB ? 0 : 1))
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}
