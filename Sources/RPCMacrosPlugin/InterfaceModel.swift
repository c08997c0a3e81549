import SwiftSyntax

/// An `@RPCInterface` protocol as the macro reads it: everything the generated code needs, in plain values.
struct InterfaceModel {
    struct Parameter {
        /// The argument label at call sites, nil for `_`.
        let label: String?
        /// The name inside the proxy's method body.
        let local: String
        /// The name on the wire (by-name params) and in `rpc.discover`: the label, else the parameter name.
        let wireName: String
        let type: String
    }

    struct Method {
        let name: String
        let summary: String
        let parameters: [Parameter]
        /// The declared result type; nil for none (`Void`).
        let resultType: String?
        let resultName: String
        let readOnly: Bool
        let mayBlock: Bool
        /// Type expressions as written (`DivisionByZero.self`).
        let errors: [String]
        /// One array parameter that is the whole params list, by position.
        let paramsList: Bool
        /// The parameter clause as written, `(a: Double, b: Double)`.
        let parameterClause: String
    }

    let name: String
    let service: String
    /// The `events:` argument's expression as written, or nil.
    let events: String?
    let summary: String
    let isPublic: Bool
    let methods: [Method]

    init(_ node: AttributeSyntax, _ declaration: some SyntaxProtocol) throws {
        guard let proto = declaration.as(ProtocolDeclSyntax.self) else {
            throw InterfaceSyntaxError("@RPCInterface declares a service with a protocol")
        }
        events = Self.arguments(of: node)["events"]?.trimmedDescription
        guard let service = Self.arguments(of: node)["service"].flatMap(Self.stringLiteral) else {
            throw InterfaceSyntaxError("@RPCInterface needs the service name: @RPCInterface(service: \"calc\")")
        }
        name = proto.name.text
        self.service = service
        summary = Self.documentation(proto.leadingTrivia)
        isPublic = proto.modifiers.contains { $0.name.tokenKind == .keyword(.public) }
        methods = try proto.memberBlock.members.map { member in
            guard let function = member.decl.as(FunctionDeclSyntax.self) else {
                throw InterfaceSyntaxError(
                    "an @RPCInterface protocol declares only methods, not '\(member.decl.trimmedDescription)'")
            }
            return try Self.method(function)
        }
    }

    private static func method(_ function: FunctionDeclSyntax) throws -> Method {
        let name = function.name.text
        let effects = function.signature.effectSpecifiers
        guard effects?.asyncSpecifier != nil, effects?.throwsClause != nil else {
            throw InterfaceSyntaxError("'\(name)' must be 'async throws': a proxy's call waits for the network and can fail")
        }
        if function.genericParameterClause != nil {
            throw InterfaceSyntaxError("'\(name)' cannot be generic: its parameters need JSON Schemas")
        }
        let parameters = try function.signature.parameterClause.parameters.map { parameter -> Parameter in
            if parameter.ellipsis != nil {
                throw InterfaceSyntaxError(
                    "'\(name)' cannot forward a variadic parameter: declare an array with @RPCMethod(paramsList: true)")
            }
            let first = parameter.firstName.text
            let label = first == "_" ? nil : first
            let local = parameter.secondName?.text ?? first
            return Parameter(label: label, local: local, wireName: label ?? local, type: parameter.type.trimmedDescription)
        }
        var marker: [String: ExprSyntax] = [:]
        for case .attribute(let attribute) in function.attributes
        where attribute.attributeName.trimmedDescription == "RPCMethod" {
            marker = arguments(of: attribute)
        }
        let paramsList = marker["paramsList"].map(booleanLiteral) ?? false
        if paramsList && (parameters.count != 1 || !parameters[0].type.hasPrefix("[")) {
            throw InterfaceSyntaxError("'\(name)': paramsList: true needs exactly one parameter, an array")
        }
        let resultType = function.signature.returnClause.map { $0.type.trimmedDescription }
        return Method(
            name: name, summary: documentation(function.leadingTrivia), parameters: parameters,
            resultType: resultType == "Void" || resultType == "()" ? nil : resultType,
            resultName: marker["result"].flatMap(stringLiteral) ?? "result",
            readOnly: marker["readOnly"].map(booleanLiteral) ?? false,
            mayBlock: marker["mayBlock"].map(booleanLiteral) ?? false,
            errors: marker["errors"]?.as(ArrayExprSyntax.self)?.elements.map { $0.expression.trimmedDescription } ?? [],
            paramsList: paramsList, parameterClause: function.signature.parameterClause.trimmedDescription)
    }

    private static func arguments(of attribute: AttributeSyntax) -> [String: ExprSyntax] {
        guard case .argumentList(let list) = attribute.arguments else { return [:] }
        var arguments: [String: ExprSyntax] = [:]
        for argument in list {
            if let label = argument.label?.text { arguments[label] = argument.expression }
        }
        return arguments
    }

    private static func stringLiteral(_ expression: ExprSyntax) -> String? {
        guard let literal = expression.as(StringLiteralExprSyntax.self) else { return nil }
        var text = ""
        for segment in literal.segments {
            guard let piece = segment.as(StringSegmentSyntax.self) else { return nil }
            text += piece.content.text
        }
        return text
    }

    private static func booleanLiteral(_ expression: ExprSyntax) -> Bool {
        expression.as(BooleanLiteralExprSyntax.self)?.literal.tokenKind == .keyword(.true)
    }

    /// The first paragraph of the `///` doc comment before a declaration, as one line: the summary
    /// `rpc.discover` shows.
    private static func documentation(_ trivia: Trivia) -> String {
        var lines: [String] = []
        for piece in trivia {
            guard case .docLineComment(let text) = piece else { continue }
            let line = String(text.dropFirst(3)).trimmingCharacters(in: " ")
            // The first paragraph only: what follows is documentation for Swift readers.
            if line.isEmpty && !lines.isEmpty { break }
            if !line.isEmpty { lines.append(line) }
        }
        return lines.joined(separator: " ")
    }
}

extension String {
    func trimmingCharacters(in character: Character) -> String {
        var text = Substring(self)
        while text.first == character { text.removeFirst() }
        while text.last == character { text.removeLast() }
        return String(text)
    }

    /// The text as a Swift string literal.
    var literal: String {
        var escaped = "\""
        for character in self {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped + "\""
    }
}
