import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin behind `RPCMacros`: it runs inside the compiler while a package that declares an
/// interface is built, and is never linked into rpcd, a module or a client.
@main
struct RPCMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [RPCInterfaceMacro.self, RPCMethodMacro.self]
}
