package import RPCBinding
package import RPCConfig
package import RPCJSON
package import RPCProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A command method: a `[Command]` section of a handler file, which makes a method of a program that already
/// exists (docs/MODULES.md, "Command methods").
///
///     [Command]
///     Method=isActive
///     Exec=/usr/bin/systemctl is-active -- {unit}
///     Param=unit string [A-Za-z0-9@._:-]+
///     SuccessExitStatus=3
///     ReadOnly=yes
///
/// There is no shell. `Exec=` is split into words once, when the file is read; a call's params are checked
/// (`arguments(for:)`) and each placeholder is replaced inside its one word, so a param is always exactly one
/// argument, whatever it holds, and never an option unless the template puts it after literal text or a `--`.
package struct HandlerCommand: Hashable, Sendable {
    /// `Method=`: the method's name within the handler's service.
    package var method = ""
    /// `Description=`: the method's summary in `rpc.discover`.
    package var summary = ""
    /// `Exec=` split into words; the first is the program, an absolute path.
    package var template: [Word] = []
    /// `Param=`, in the order positional params take them.
    package var params: [Param] = []
    /// `Output=`: what standard output becomes.
    package var output = Output.text
    /// `ReadOnly=`: the method changes nothing (`AllowRead=` callers may call it).
    package var readOnly = false
    /// `SuccessExitStatus=`: exit statuses besides 0 that are a result, not an error.
    package var successExitStatus: [Int] = []
    /// `MaxOutputSize=`: the most standard output may hold; past it the command is killed.
    package var maxOutputSize = defaultMaxOutputSize
    /// The section's header and assignments as written: what `--check-config` prints, and what crosses to the
    /// module host, which reads them with this same `parse`.
    package var header = INISectionHeader(name: "Command", file: "", line: 0)
    package var entries: [INIEntry] = []
    package var file: String { header.file }
    package var line: Int { header.line }

    package static let defaultMaxOutputSize = 1 << 20
    /// The longest value a param may have, in bytes: a command line is not a place for data.
    package static let maxValueLength = 4096
    /// Where a bare program name (`Exec=systemctl …`) is looked for, as systemd looks for one; also the
    /// command's `PATH`.
    package static let searchPath = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]

    package enum Output: String, Hashable, Sendable, CaseIterable {
        /// A string: standard output, less one final newline.
        case text
        /// An array of strings, one per line.
        case lines
        /// The JSON value standard output holds.
        case json
    }

    package struct Param: Hashable, Sendable {
        package var name: String
        package var type: ParamType
        /// What the whole value must match (a regular expression); nil: any value.
        package var pattern: String?
    }

    package enum ParamType: String, Hashable, Sendable, CaseIterable {
        case string, integer, number, boolean
    }

    /// One argument of the template: literal text and placeholders.
    package struct Word: Hashable, Sendable {
        package var parts: [Part]

        /// Whether the word starts with a placeholder: a value there could be read as an option.
        var startsWithParam: Bool {
            if case .param = parts.first { return true }
            return false
        }
    }

    package enum Part: Hashable, Sendable {
        case literal(String)
        /// The param at this index of `params`.
        case param(Int)
    }

    /// The program the command runs.
    package var program: String {
        guard case .literal(let path) = template.first?.parts.first else { return "" }
        return path
    }

    // MARK: Reading a section

    private static let schema = INISchema<HandlerCommand>(
        defaults: HandlerCommand(),
        sections: [
            INISection(
                "Command",
                keys: [
                    .value("Method", \.method, parse: { entry throws(ConfigError) in
                        guard MemberName.isValid(entry.value) else { throw entry.invalidValue(expected: MemberName.rule) }
                        return entry.value
                    }, format: { $0 }),
                    .value("Description", \.summary, parse: { $0.value }, format: { $0 }),
                    // Exec= and Param= are read together once the section is whole: placeholders name params.
                    .value("Exec", \.rawExec, parse: { $0 }, format: { $0?.value ?? "" }),
                    .list("Param", \.rawParams, parse: { $0 }, format: { $0.value }),
                    .value("Output", \.output, parse: { entry throws(ConfigError) in
                        guard let output = Output(rawValue: entry.value) else {
                            throw entry.invalidValue(expected: "expected one of: " + Output.allCases.map(\.rawValue).joined(separator: ", "))
                        }
                        return output
                    }, format: \.rawValue),
                    .boolean("ReadOnly", \.readOnly),
                    .list("SuccessExitStatus", \.successExitStatus, parse: { entry throws(ConfigError) in
                        try entry.integerValue(in: 0...255)
                    }, format: { String($0) }),
                    .size("MaxOutputSize", \.maxOutputSize, in: 1...RPCLimits.maxFrameSize.range.upperBound),
                ]),
        ])

    /// The assignments being read; nil outside `parse`.
    private var rawExec: INIEntry?
    private var rawParams: [INIEntry] = []

    /// Reads one `[Command]` section: its assignments, in order, from the header `header` on.
    /// `exists` says whether a path names an executable file (a test may stand in for the file system).
    package static func parse(
        _ entries: [INIEntry], header: INISectionHeader, exists: (String) -> Bool = isExecutable
    ) throws(ConfigError) -> HandlerCommand {
        let document = INIDocument(file: header.file, entries: entries, sectionHeaders: [header])
        var command = try schema.settings(from: [document])
        command.header = header
        command.entries = entries
        guard !command.method.isEmpty else {
            throw ConfigError(file: header.file, line: header.line, message: "[Command] needs Method=, the method's name")
        }
        guard let exec = command.rawExec else {
            throw ConfigError(file: header.file, line: header.line, message: "[Command] \(command.method) needs Exec=, the command to run")
        }
        for entry in command.rawParams {
            let param = try parseParam(entry)
            guard !command.params.contains(where: { $0.name == param.name }) else {
                throw entry.invalidValue(expected: "param '\(param.name)' is declared twice")
            }
            command.params.append(param)
        }
        command.template = try parseTemplate(exec, params: command.params, exists: exists)
        command.rawExec = nil
        command.rawParams = []
        return command
    }

    /// `Param=NAME [TYPE] [PATTERN]`.
    private static func parseParam(_ entry: INIEntry) throws(ConfigError) -> Param {
        let fields = entry.value.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true).map(String.init)
        guard let name = fields.first, MemberName.isValid(name) else {
            throw entry.invalidValue(expected: "expected NAME [TYPE] [PATTERN], the name a member name (\(MemberName.rule))")
        }
        var rest = fields.dropFirst()[...]
        var type = ParamType.string
        if let word = rest.first, let named = ParamType(rawValue: word) {
            type = named
            rest = rest.dropFirst()
        }
        let pattern = rest.isEmpty ? nil : rest.joined(separator: " ").trimmingSpaces
        if let pattern {
            do {
                _ = try Regex(pattern)
            } catch {
                throw entry.invalidValue(expected: "'\(pattern)' is not a regular expression: \(error)")
            }
        }
        return Param(name: name, type: type, pattern: pattern)
    }

    /// Splits `Exec=` into words (quotes as in systemd: `"…"` and `'…'` keep spaces; `{{` and `}}` are literal
    /// braces) and each word into literal text and `{param}` placeholders.
    private static func parseTemplate(_ entry: INIEntry, params: [Param], exists: (String) -> Bool) throws(ConfigError) -> [Word] {
        var words: [Word] = []
        var parts: [Part] = []
        var literal = ""
        var inWord = false
        var quote: Character?
        var characters = entry.value[...]
        func endLiteral() {
            if !literal.isEmpty { parts.append(.literal(literal)) }
            literal = ""
        }
        while let character = characters.popFirst() {
            if let open = quote {
                if character == open { quote = nil; continue }
            } else if character == " " || character == "\t" {
                if inWord {
                    endLiteral()
                    words.append(Word(parts: parts))
                    parts = []
                    inWord = false
                }
                continue
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
                continue
            }
            inWord = true
            switch character {
            case "{" where characters.first == "{", "}" where characters.first == "}":
                characters.removeFirst()
                literal.append(character)
            case "{":
                guard let close = characters.firstIndex(of: "}") else {
                    throw entry.invalidValue(expected: "a '{' opens a placeholder that no '}' closes (write '{{' for a brace)")
                }
                let name = String(characters[..<close])
                guard let index = params.firstIndex(where: { $0.name == name }) else {
                    throw entry.invalidValue(expected: "placeholder {\(name)} names no Param= of this [Command]")
                }
                endLiteral()
                parts.append(.param(index))
                characters = characters[characters.index(after: close)...]
            case "}":
                throw entry.invalidValue(expected: "a '}' closes no placeholder (write '}}' for a brace)")
            default:
                literal.append(character)
            }
        }
        guard quote == nil else { throw entry.invalidValue(expected: "a quote is not closed") }
        if inWord {
            endLiteral()
            words.append(Word(parts: parts))
        }
        guard let first = words.first, first.parts.count == 1, case .literal(let program) = first.parts[0] else {
            throw entry.invalidValue(expected: "expected a program, then its arguments; the program cannot hold a placeholder")
        }
        for (index, param) in params.enumerated()
        where !words.contains(where: { $0.parts.contains(.param(index)) }) {
            throw entry.invalidValue(expected: "Param=\(param.name) is declared but Exec= has no {\(param.name)}")
        }
        words[0].parts = [.literal(try resolve(program, entry: entry, exists: exists))]
        return words
    }

    /// An absolute path as it is; a bare name looked for in `searchPath`.
    private static func resolve(_ program: String, entry: INIEntry, exists: (String) -> Bool) throws(ConfigError) -> String {
        if program.hasPrefix("/") {
            guard !program.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else {
                throw entry.invalidValue(expected: "the program's path may not hold '.' or '..'")
            }
            return program
        }
        guard !program.contains("/") else {
            throw entry.invalidValue(expected: "the program is an absolute path or a bare name looked for in \(searchPath.joined(separator: ":"))")
        }
        guard let found = searchPath.map({ $0 + "/" + program }).first(where: exists) else {
            throw entry.invalidValue(expected: "no program '\(program)' in \(searchPath.joined(separator: ":"))")
        }
        return found
    }

    package static func isExecutable(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
    }

    /// The section as INI text.
    package var rendered: String {
        "[Command]\n" + entries.map { "\($0.key)=\($0.value)\n" }.joined()
    }

    /// The section as it crosses the link to the module host.
    var json: JSONValue {
        [
            "file": .string(header.file), "line": .number(header.line),
            "entries": .array(entries.map { ["key": .string($0.key), "value": .string($0.value), "line": .number($0.line)] }),
        ]
    }

    /// Reads what `json` wrote, as `parse` reads the file.
    static func parse(json: JSONValue) throws(ConfigError) -> HandlerCommand {
        guard let file = json["file"]?.stringValue, let line = json["line"]?.intValue else {
            throw ConfigError(file: "", line: nil, message: "a [Command] section did not cross the link whole")
        }
        let entries = (json["entries"]?.arrayValue ?? []).compactMap { entry -> INIEntry? in
            guard let key = entry["key"]?.stringValue, let value = entry["value"]?.stringValue,
                  let line = entry["line"]?.intValue else { return nil }
            return INIEntry(section: "Command", key: key, value: value, file: file, line: line)
        }
        return try parse(entries, header: INISectionHeader(name: "Command", file: file, line: line))
    }

    // MARK: Calls

    /// The method as `rpc.discover` shows it and as params are bound.
    package var descriptor: RPCMethodDescriptor {
        let params = params.map { param in
            var schema: [String: JSONValue] = ["type": .string(param.type.rawValue)]
            if param.type == .string { schema["maxLength"] = .number(Self.maxValueLength) }
            if let pattern = param.pattern { schema["pattern"] = .string("^(?:\(pattern))$") }
            return RPCParam(param.name, schema: .object(schema))
        }
        let result: JSONValue = switch output {
        case .text: ["type": "string"]
        case .lines: ["type": "array", "items": ["type": "string"]]
        case .json: [:]
        }
        return RPCMethodDescriptor(
            name: method, summary: summary, params: params, result: RPCParam("output", schema: result),
            flags: readOnly ? .readOnly : [])
    }

    /// The command's arguments for a call whose params are bound to `values` (by name): each param checked
    /// against its type, its pattern, `maxValueLength` and NUL, and refused where it would begin an
    /// argument with `-` that no literal text or earlier `--` keeps from being read as an option.
    package func arguments(for values: [String: JSONValue]) throws(RPCError) -> [String] {
        var rendered: [String] = []
        for param in params {
            let value = values[param.name] ?? .null
            let text: String
            switch (param.type, value) {
            case (.string, .string(let string)): text = string
            case (.integer, .number) where value.intValue != nil: text = String(value.intValue!)
            case (.number, .number): text = String(decoding: value.serialized(), as: UTF8.self)
            case (.boolean, .bool(let flag)): text = flag ? "true" : "false"
            default: throw Self.refused(param.name, "must be \(param.type == .integer ? "an" : "a") \(param.type.rawValue)")
            }
            guard !text.utf8.contains(0) else { throw Self.refused(param.name, "may not hold a NUL character") }
            guard text.utf8.count <= Self.maxValueLength else {
                throw Self.refused(param.name, "is longer than \(Self.maxValueLength) bytes")
            }
            if let pattern = param.pattern {
                let matches = (try? Regex(pattern).wholeMatch(in: text)) != nil
                guard matches else { throw Self.refused(param.name, "does not match \(pattern)") }
            }
            rendered.append(text)
        }
        var arguments: [String] = []
        var optionsEnded = false
        for word in template {
            var argument = ""
            for part in word.parts {
                switch part {
                case .literal(let text): argument += text
                case .param(let index): argument += rendered[index]
                }
            }
            if word.startsWithParam, !optionsEnded, argument.hasPrefix("-"), case .param(let index) = word.parts[0] {
                throw Self.refused(params[index].name, "may not begin with '-' here: the command would read it as an option")
            }
            if word.parts == [.literal("--")] { optionsEnded = true }
            arguments.append(argument)
        }
        return arguments
    }

    private static func refused(_ name: String, _ why: String) -> RPCError {
        RPCError(code: RPCError.Code.invalidParams, message: "Invalid params", data: ["detail": .string("param '\(name)' \(why)")])
    }

    /// What a call's standard output becomes; nil: it is not what `output` says (`json` that does not parse).
    package func result(from output: [UInt8]) -> JSONValue? {
        switch self.output {
        case .text:
            var bytes = output[...]
            if bytes.last == UInt8(ascii: "\n") { bytes = bytes.dropLast() }
            return .string(String(decoding: bytes, as: UTF8.self))
        case .lines:
            var lines = output.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            if lines.last?.isEmpty == true { lines.removeLast() }
            return .array(lines.map { .string(String(decoding: $0, as: UTF8.self)) })
        case .json:
            return try? JSONValue(parsing: output)
        }
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(self.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
