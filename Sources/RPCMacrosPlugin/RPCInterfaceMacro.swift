package import SwiftSyntax
import SwiftSyntaxBuilder
package import SwiftSyntaxMacros

/// `@RPCInterface(service:)` on a protocol writes, from its declaration:
/// - `rpcInterface`, in an extension of the protocol: the `RPCInterfaceDeclaration` (methods, parameter names,
///   schemas from the Swift types, results, documented errors, flags);
/// - `rpcImplementations`, in an extension for `Self: Sendable`: how to run each method on a conforming type,
///   what a module exports;
/// - a peer struct `<Name>Proxy` conforming to the protocol and to `RPCProxy`, whose methods call the server
///   by name with named params;
/// - a peer protocol `Sync<Name>` refining it with the same methods, not `async`: an implementation whose
///   methods never suspend conforms to it, and a third extension (for `Self: Sync<Name>`) runs them without
///   a task (the module SDK calls them straight on rpcd's thread, as it does bodies that are not `async`).
/// Everything generated refers to the `RPCInterface` runtime only, so the protocol's file needs no SDK and no
/// client. Errors in the declaration are diagnosed at the attribute, naming the method.
package struct RPCInterfaceMacro: PeerMacro, ExtensionMacro {
    package static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        let model = try InterfaceModel(node, declaration)
        return [DeclSyntax(stringLiteral: proxy(model)), DeclSyntax(stringLiteral: syncProtocol(model))]
    }

    package static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        let model = try InterfaceModel(node, declaration)
        return [
            try extensionDecl(declarationExtension(model)),
            try extensionDecl(implementationExtension(model)),
            try extensionDecl(syncExtension(model)),
        ]
    }

    private static func extensionDecl(_ text: String) throws -> ExtensionDeclSyntax {
        guard let decl = DeclSyntax(stringLiteral: text).as(ExtensionDeclSyntax.self) else {
            throw InterfaceSyntaxError("internal error: generated an extension that does not parse")
        }
        return decl
    }

    // MARK: The declaration and the module side

    static func declarationExtension(_ model: InterfaceModel) -> String {
        let access = model.isPublic ? "public " : ""
        let descriptors = model.methods.map { "            " + descriptor($0) }.joined(separator: ",\n")
        return """
            extension \(model.name) {
                /// The interface `\(model.name)` declares: what `rpc.discover` lists and the fingerprint hashes.
                \(access)static var rpcInterface: RPCInterfaceDeclaration {
                    RPCInterfaceDeclaration(
                        service: \(model.service.literal), summary: \(model.summary.literal),
                        methods: [
            \(descriptors)
                        ],
                        events: \(model.events ?? "[]"))
                }
            }
            """
    }

    /// For implementations (`Sendable`, as modules are: their methods are run from any thread).
    static func implementationExtension(_ model: InterfaceModel) -> String {
        implementations(model, constraint: "Sendable", suspending: true, what: "run on a conforming type: what a module exports")
    }

    /// For `Self: Sync<Name>`: the same methods, called without `await`, so they run without a task.
    static func syncExtension(_ model: InterfaceModel) -> String {
        implementations(
            model, constraint: "Sync\(model.name) & Sendable", suspending: false,
            what: "run on an implementation whose methods do not suspend")
    }

    private static func implementations(
        _ model: InterfaceModel, constraint: String, suspending: Bool, what: String
    ) -> String {
        let access = model.isPublic ? "public " : ""
        let methods = model.methods.enumerated().map { index, method in
            let call = (suspending ? "await " : "") + call(method)
            let body =
                method.resultType == nil
                ? "try \(call)\n                return ResultEncoding.null"
                : "return try ResultEncoding.encode(\(call))"
            return """
                            RPCMethodImplementation(
                                methods[\(index)], paramsList: \(method.paramsList),
                                \(suspending ? "invoke" : "invokeNow"): { implementation, arguments in
                                    \(body)
                                })
                """
        }.joined(separator: ",\n")
        return """
            extension \(model.name) where Self: \(constraint) {
                /// Each method of `\(model.name)`, \(what).
                \(access)static var rpcImplementations: [RPCMethodImplementation<Self>] {
                    let methods = rpcInterface.methods
                    return [
            \(methods)
                    ]
                }
            }
            """
    }

    private static func descriptor(_ method: InterfaceModel.Method) -> String {
        // Written out in `rpcInterface` only; the implementations take theirs from there.
        let params = method.paramsList ? "" : method.parameters.map {
            "RPCSchema.param(\($0.wireName.literal), (\($0.type)).self)"
        }.joined(separator: ", ")
        let result = method.resultType.map { "RPCSchema.param(\(method.resultName.literal), (\($0)).self)" } ?? "nil"
        var flags: [String] = []
        if method.readOnly { flags.append(".readOnly") }
        if method.mayBlock { flags.append(".mayBlock") }
        let errors = method.errors.map { "\(typeName($0)).documentation" }.joined(separator: ", ")
        return """
            RPCMethodDescriptor(
                                name: \(method.name.literal), summary: \(method.summary.literal), params: [\(params)],
                                result: \(result), errors: [\(errors)], flags: [\(flags.joined(separator: ", "))])
            """
    }

    /// `implementation.add(a: arguments.decode("a"), b: arguments.decode("b"))`.
    private static func call(_ method: InterfaceModel.Method) -> String {
        let arguments = method.parameters.map { parameter in
            let value = method.paramsList ? "arguments.decodeList()" : "arguments.decode(\(parameter.wireName.literal))"
            return parameter.label.map { "\($0): \(value)" } ?? value
        }.joined(separator: ", ")
        return "implementation.\(method.name)(\(arguments))"
    }

    /// `protocol Sync<Name>: <Name>` with each method without `async`.
    static func syncProtocol(_ model: InterfaceModel) -> String {
        let access = model.isPublic ? "public " : ""
        let requirements = model.methods.map { method in
            "    func \(method.name)\(method.parameterClause) throws\(method.resultType.map { " -> \($0)" } ?? "")"
        }.joined(separator: "\n")
        return """
            /// `\(model.name)` for implementations whose methods never suspend: a module conforming to it runs each
            /// call as a plain function call on rpcd's thread, without a task.
            \(access)protocol Sync\(model.name): \(model.name) {
            \(requirements)
            }
            """
    }

    // MARK: The client side

    static func proxy(_ model: InterfaceModel) -> String {
        let access = model.isPublic ? "public " : ""
        let methods = model.methods.map { proxyMethod($0, access: access) }.joined(separator: "\n\n")
        return """
            /// `\(model.name)` on a server: each method calls `\(model.service).<method>` with named params. Made by
            /// `RPCProxy.connect` or `RPCClient.proxy`, which check the interface fingerprint first.
            \(access)struct \(model.name)Proxy: \(model.name), RPCProxy {
                \(access)let connection: RPCProxyConnection

                \(access)init(connection: RPCProxyConnection) {
                    self.connection = connection
                }

            \(methods)
            }
            """
    }

    private static func proxyMethod(_ method: InterfaceModel.Method, access: String) -> String {
        let signature = method.parameters.map { parameter in
            let label = parameter.label ?? "_"
            return label == parameter.local ? "\(label): \(parameter.type)" : "\(label) \(parameter.local): \(parameter.type)"
        }.joined(separator: ", ")
        let errors = method.errors.isEmpty ? "" : ", errors: [\(method.errors.joined(separator: ", "))]"
        let params =
            method.paramsList
            ? "list: \(method.parameters[0].local).map { try RPCValueEncoding.value($0) }"
            : "[" + (method.parameters.isEmpty ? ":" : method.parameters.map {
                "\($0.wireName.literal): try RPCValueEncoding.argument(\($0.local))"
            }.joined(separator: ", ")) + "]"
        let returns = method.resultType.map { " -> \($0)" } ?? ""
        let call = "try await connection.call(\(method.name.literal), \(params)\(errors)"
        let body =
            method.resultType == nil
            ? "let _: JSONValue = \(call))"
            : "\(call), returning: (\(method.resultType!)).self)"
        return """
                \(access)func \(method.name)(\(signature)) async throws\(returns) {
                    \(body)
                }
            """
    }

    /// `DivisionByZero.self` → `DivisionByZero`.
    private static func typeName(_ expression: String) -> String {
        expression.hasSuffix(".self") ? String(expression.dropLast(5)) : expression
    }
}
