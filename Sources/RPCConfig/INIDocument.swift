/// One `Key=Value` assignment, with the section it is in and where it was written.
///
/// `key` and `value` are trimmed of surrounding whitespace and otherwise literal: there is no
/// quote or escape processing, so `Key=a # b` has the value `a # b`, as for systemd.
package struct INIEntry: Hashable, Sendable {
    package var section: String
    package var key: String
    package var value: String
    /// The file the assignment is in, for error messages.
    package var file: String
    /// The 1-based line the assignment starts on (its first line when continued with `\`).
    package var line: Int

    package init(section: String, key: String, value: String, file: String, line: Int) {
        self.section = section
        self.key = key
        self.value = value
        self.file = file
        self.line = line
    }
}

/// A `[Section]` header line. Kept so that an unknown section is reported at its header, even
/// when it holds no assignments.
package struct INISectionHeader: Hashable, Sendable {
    package var name: String
    package var file: String
    package var line: Int

    package init(name: String, file: String, line: Int) {
        self.name = name
        self.file = file
        self.line = line
    }
}

/// A file in systemd's INI syntax (man systemd.syntax), as a flat list of assignments in file order.
///
/// The document knows nothing about which sections and keys exist; a schema (see `INISchema`)
/// gives the assignments meaning. Sections may repeat; their assignments simply follow each other.
package struct INIDocument: Hashable, Sendable {
    /// The path the text came from, used in error messages.
    package var file: String
    /// Every assignment, in file order.
    package var entries: [INIEntry]
    /// Every section header, in file order (a repeated section appears once per header).
    package var sectionHeaders: [INISectionHeader]

    package init(file: String, entries: [INIEntry], sectionHeaders: [INISectionHeader] = []) {
        self.file = file
        self.entries = entries
        self.sectionHeaders = sectionHeaders
    }

    /// Parses systemd INI text.
    ///
    /// - `[Section]` starts a section; `#` and `;` start comment lines; blank lines are ignored.
    /// - `Key=Value` assigns; whitespace around key and value is dropped.
    /// - A line ending in an unescaped `\` continues on the next line; the backslash becomes a
    ///   space and comment lines inside the continuation are skipped.
    /// - Lines end at LF, CRLF or CR; a leading UTF-8 byte order mark is ignored.
    ///
    /// Throws for a line that is neither of these, a malformed or empty section header, an empty
    /// key, or an assignment before the first section header. The error names the line the
    /// offending (possibly continued) line starts on.
    package static func parse(_ text: String, file: String) throws(ConfigError) -> INIDocument {
        var parser = Parser(file: file)
        var text = Substring(text)
        if text.unicodeScalars.first == "\u{FEFF}" { text = text.dropFirst() }

        // Newlines are always grapheme boundaries, so splitting Characters finds exactly the
        // LF, CRLF and CR line ends systemd's read_line() recognises.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        var continuation: (text: String, line: Int)?
        for (index, line) in lines.enumerated() {
            // Comment lines are dropped before continuation handling, so they are skipped inside a
            // continuation and a comment ending in a backslash does not swallow the next line.
            if line.isINIComment { continue }
            var logical = (continuation?.text ?? "") + line
            let startLine = continuation?.line ?? index + 1
            if line.endsWithUnescapedBackslash {
                logical.removeLast()
                continuation = (logical + " ", startLine)
                continue
            }
            continuation = nil
            try parser.parseLine(logical, line: startLine)
        }
        // A backslash on the last line continues onto nothing, which systemd accepts.
        if let continuation { try parser.parseLine(continuation.text, line: continuation.line) }
        return INIDocument(file: file, entries: parser.entries, sectionHeaders: parser.headers)
    }
}

/// The state of parsing one file: the current section and the assignments so far.
private struct Parser {
    let file: String
    var section: String?
    var entries: [INIEntry] = []
    var headers: [INISectionHeader] = []

    init(file: String) { self.file = file }

    mutating func parseLine(_ text: String, line: Int) throws(ConfigError) {
        let text = text.trimmingINIWhitespace()
        if text.isEmpty || text.isINIComment { return }

        if text.hasPrefix("[") {
            guard text.count >= 2, text.hasSuffix("]") else {
                throw error(line, "invalid section header '\(text)': expected [Name] alone on the line (comments must be on lines of their own)")
            }
            // Like systemd, the name between the brackets is taken as written, spaces included.
            let name = String(text.dropFirst().dropLast())
            guard !name.isEmpty else { throw error(line, "empty section name '[]'") }
            section = name
            headers.append(INISectionHeader(name: name, file: file, line: line))
            return
        }

        guard let equals = text.firstIndex(of: "=") else {
            throw error(line, "expected Key=Value, a [Section] header or a comment, got '\(text)'")
        }
        let key = text[..<equals].trimmingINIWhitespace()
        let value = text[text.index(after: equals)...].trimmingINIWhitespace()
        guard !key.isEmpty else { throw error(line, "missing key name before '=' in '\(text)'") }
        guard let section else {
            throw error(line, "assignment '\(key)=' before the first section header; put it below a [Section] line")
        }
        // Only trailing blanks kept such a backslash from continuing the line; invisible, and impossible to write
        // back (`rpcd --check-config`) with the same meaning.
        guard !value.endsWithUnescapedBackslash else {
            throw error(line, "the value of \(key)= ends in a backslash followed by blanks; remove the backslash (or write it as \\\\)")
        }
        entries.append(INIEntry(section: section, key: key, value: value, file: file, line: line))
    }

    private func error(_ line: Int, _ message: String) -> ConfigError {
        ConfigError(file: file, line: line, message: message)
    }
}

extension StringProtocol {
    /// Drops systemd's WHITESPACE (space, tab, CR, LF) from both ends. Not Unicode's wider set:
    /// a no-break space stays part of a value, exactly as it does for systemd.
    func trimmingINIWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.isINIWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.isINIWhitespace })!
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    /// Whether the first non-blank character starts a comment.
    fileprivate var isINIComment: Bool {
        guard let first = unicodeScalars.first(where: { !$0.isINIWhitespace }) else { return false }
        return first == "#" || first == ";"
    }

    /// Whether the line ends in a backslash that is not itself escaped: `a\` continues, `a\\` does not.
    fileprivate var endsWithUnescapedBackslash: Bool {
        var escaped = false
        for scalar in unicodeScalars {
            if escaped { escaped = false } else if scalar == "\\" { escaped = true }
        }
        return escaped
    }
}

extension Unicode.Scalar {
    fileprivate var isINIWhitespace: Bool { self == " " || self == "\t" || self == "\n" || self == "\r" }
}
