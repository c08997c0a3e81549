import Foundation
import XCTest

/// Package.swift's dependencies are what the sources import, no more and no less: a dependency nothing imports
/// still builds and links for nothing (and hides the real layering), and an import the manifest does not
/// declare compiles only while some other dependency happens to build that module first.
final class ManifestImportsTests: XCTestCase {
    func testEveryTargetImportsWhatItDependsOnAndNothingElse() throws {
        let manifest = try PackageManifest.dump()
        let graph = try PackageManifest.graph(manifest)
        // The modules this package knows: its own targets and the products it uses. Anything else a file imports
        // (Glibc, Foundation, Synchronization, XCTest) is the toolchain's.
        let known = Set(graph.keys).union(graph.values.flatMap(\.products))
        for target in try XCTUnwrap(manifest["targets"] as? [[String: Any]]) where target["type"] as? String != "test" {
            let name = try XCTUnwrap(target["name"] as? String)
            let files = try PackageManifest.swiftFiles(of: target)
            guard !files.isEmpty, let declared = graph[name] else { continue }  // C and system-library targets
            var used: Set<String> = []
            for file in files {
                used.formUnion(Self.modulesUsed(in: try String(contentsOf: file, encoding: .utf8)))
            }
            used.remove(name)
            let dependencies = declared.targets.union(declared.products)
            XCTAssertEqual(
                dependencies.subtracting(used).sorted(), [],
                "Package.swift gives \(name) dependencies none of its files imports: drop them")
            XCTAssertEqual(
                used.intersection(known).subtracting(dependencies).sorted(), [],
                "\(name)'s files import modules Package.swift does not give it: declare them")
        }
    }

    /// The modules a file imports (any access level or attribute), and the macro plugins it names
    /// (`#externalMacro(module: "…")`, a dependency no `import` shows).
    static func modulesUsed(in text: String) -> Set<String> {
        var modules: Set<String> = []
        // Most lines mention neither: a plain search first keeps the regular expressions off them.
        for line in text.split(separator: "\n") where line.contains("import") || line.contains("#externalMacro") {
            if let match = line.firstMatch(
                of: /^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)/)
            {
                modules.insert(String(match.1))
            }
            for match in line.matches(of: /#externalMacro\(module:\s*"(\w+)"/) { modules.insert(String(match.1)) }
        }
        return modules
    }

    func testImportsAreReadWhateverTheirAttributesAndAccess() {
        let text = """
            @_exported public import RPCJSON
            @_exported import RPCBinding
            public import RPCProtocol
            package import NIOCore
            @preconcurrency internal import Logging
            @preconcurrency package import NIOSSL
            import struct NIOPosix.MultiThreadedEventLoopGroup
            // import NotAModule
            public macro M() = #externalMacro(module: "RPCMacrosPlugin", type: "M")
            """
        XCTAssertEqual(
            Self.modulesUsed(in: text),
            ["RPCJSON", "RPCBinding", "RPCProtocol", "NIOCore", "Logging", "NIOSSL", "NIOPosix", "RPCMacrosPlugin"])
    }
}
