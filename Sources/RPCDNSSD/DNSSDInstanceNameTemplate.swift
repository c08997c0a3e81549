/// How instance names are made: a template such as `%s on %h`, from `[Avahi] InstanceName=`.
///
/// Specifiers: `%s` the service name (`calc`), `%h` the host name Avahi publishes (`build-7`, without
/// `.local`), `%%` a percent sign. Anything else after `%` is refused when the template is parsed, so a typo
/// shows up in `rpcd --check-config` rather than on the network; `%s` is required, so services get distinct
/// names. Expanded names are cut to one DNS label
/// (63 bytes of UTF-8) at a character boundary.
package struct DNSSDInstanceNameTemplate: Hashable, Sendable, CustomStringConvertible {
    package static let `default` = try! DNSSDInstanceNameTemplate(parsing: "%s on %h")

    /// The template as written.
    package let text: String
    private let parts: [Part]

    private enum Part: Hashable, Sendable {
        case literal(String)
        case service
        case host
    }

    /// Parses a template; the error says which specifier is unknown and which ones exist.
    package init(parsing text: String) throws(TemplateError) {
        guard !text.isEmpty else { throw TemplateError(template: text, problem: "the template is empty") }
        var parts: [Part] = []
        var literal = ""
        var characters = text.makeIterator()
        while let character = characters.next() {
            guard character == "%" else {
                literal.append(character)
                continue
            }
            let specifier = characters.next()
            switch specifier {
            case "%":
                literal.append("%")
                continue
            case "s", "h":
                if !literal.isEmpty { parts.append(.literal(literal)) }
                literal = ""
                parts.append(specifier == "s" ? .service : .host)
            default:
                let shown = specifier.map { "%\($0)" } ?? "a lone % at the end"
                throw TemplateError(
                    template: text, problem: "unknown specifier \(shown); use %s (service), %h (host name) or %% (a percent sign)")
            }
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        guard parts.contains(.service) else {
            throw TemplateError(template: text, problem: "it needs %s, or every service would get the same name")
        }
        self.text = text
        self.parts = parts
    }

    /// The instance name for `service` on `host`, at most one DNS label long.
    package func expand(service: String, host: String) -> String {
        var name = ""
        for part in parts {
            switch part {
            case .literal(let text): name += text
            case .service: name += service
            case .host: name += host
            }
        }
        return DNSSDName.truncated(name)
    }

    package var description: String { text }

    package struct TemplateError: Error, Hashable, Sendable, CustomStringConvertible {
        package var template: String
        package var problem: String
        package var description: String { "invalid instance name template '\(template)': \(problem)" }
    }
}
