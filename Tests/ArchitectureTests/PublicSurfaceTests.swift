import Foundation
import XCTest

/// Only library products have a public API (docs/ARCHITECTURE.md, "Public and package"): what rpcd's own
/// targets share is `package`. A non-product target may declare something `public` only if it is in
/// `vocabulary` below: the value types the products' APIs are made of, re-exported by a product
/// (`@_exported public import`) so that an app or a module imports one product and gets them.
final class PublicSurfaceTests: XCTestCase {
    /// Non-product targets whose declarations may be `public`, and why.
    static let vocabulary: [String: String] = [
        "RPCJSON": "JSONValue: the params and results of every call, on both sides",
        "RPCProtocol": "RPCError, its codes and RPCEndpoint: what a failed call carries and where a client connects",
        "RPCBinding": "RPCParam and the descriptors: how a module declares its methods",
        "RPCInterface": "what @RPCInterface's generated code calls, compiled in apps' and modules' own packages",
    ]

    func testOnlyProductsAndTheirVocabularyArePublic() throws {
        let manifest = try PackageManifest.dump()
        let products = try XCTUnwrap(manifest["products"] as? [[String: Any]])
        let libraryTargets = Set(products.filter { ($0["type"] as? [String: Any])?["library"] != nil }
            .flatMap { $0["targets"] as? [String] ?? [] })
        let targets = try XCTUnwrap(manifest["targets"] as? [[String: Any]]).filter { $0["type"] as? String != "test" }
        XCTAssertEqual(Set(Self.vocabulary.keys).intersection(libraryTargets), [], "products need no allow-list entry")

        var reExported: Set<String> = []
        for target in targets {
            let name = try XCTUnwrap(target["name"] as? String)
            guard libraryTargets.contains(name) || Self.vocabulary[name] != nil else {
                for (file, line, text) in try publicDeclarations(of: target) {
                    XCTFail("\(file):\(line): `\(text)`: \(name) is no product; share it with `package` (or list the target in PublicSurfaceTests.vocabulary, saying why)")
                }
                continue
            }
            for file in try PackageManifest.swiftFiles(of: target) {
                for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                    if let match = line.firstMatch(of: /^@_exported\s+(?:public\s+)?import\s+(\w+)/) { reExported.insert(String(match.1)) }
                }
            }
        }
        for name in Self.vocabulary.keys.sorted() {
            XCTAssert(reExported.contains(name), "\(name) is allowed public declarations but no product re-exports it")
        }
    }

    /// Lines that declare something `public` or `open` (after attributes and other modifiers), comments aside. A
    /// `public import` declares nothing: `@inlinable` code may need one in a package target (RPCStatistics' `Atomic`
    /// extension), and the compiler warns when it is not needed.
    private func publicDeclarations(of target: [String: Any]) throws -> [(String, Int, String)] {
        let declaration = /^\s*(?:@\w+(?:\([^)]*\))?\s+|(?:final|static|nonisolated|override|convenience|required|indirect|mutating|lazy)\s+)*(?:public|open)\b(?!\s+import\b)/
        var found: [(String, Int, String)] = []
        for file in try PackageManifest.swiftFiles(of: target) {
            let path = String(file.path.dropFirst(PackageManifest.repository.path.count + 1))
            for (index, line) in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.firstMatch(of: declaration) != nil {
                found.append((path, index + 1, line.trimmingCharacters(in: .whitespaces)))
            }
        }
        return found
    }
}
