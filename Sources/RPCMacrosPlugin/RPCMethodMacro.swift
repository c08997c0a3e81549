package import SwiftSyntax
package import SwiftSyntaxMacros

/// `@RPCMethod(...)` marks a requirement of an `@RPCInterface` protocol with what its signature cannot say
/// (result name, flags, documented errors). It expands to nothing: `RPCInterfaceMacro` reads it.
package struct RPCMethodMacro: PeerMacro {
    package static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard declaration.is(FunctionDeclSyntax.self) else {
            throw InterfaceSyntaxError("@RPCMethod marks a method of an @RPCInterface protocol")
        }
        return []
    }
}
