import Foundation
import XCTest

/// docs/ARCHITECTURE.md draws the target graph "as in Package.swift"; this test keeps it so, by comparing the
/// documented block with what SwiftPM reads from the manifest (`swift package dump-package`).
final class ArchitectureGraphTests: XCTestCase {
    private static let repository = PackageManifest.repository

    typealias Dependencies = PackageManifest.Dependencies

    func testTheDocumentedGraphIsPackageSwifts() throws {
        let documented = try documentedGraph()
        let manifest = try manifestGraph()
        XCTAssertEqual(Set(documented.keys).subtracting(manifest.keys), [], "documented, but not targets in Package.swift")
        XCTAssertEqual(Set(manifest.keys).subtracting(documented.keys), [], "targets missing from docs/ARCHITECTURE.md's graph")
        for (target, dependencies) in manifest {
            guard let row = documented[target] else { continue }
            XCTAssertEqual(row, dependencies, "docs/ARCHITECTURE.md's row for \(target)")
        }
    }

    /// The table under "## Layers" is the one list of targets (README, Package.swift and the Makefile point to
    /// it): every target of the manifest has a row, every name in a row's first cell is a target, and a target
    /// depends only on targets in its own row or above it.
    func testTheLayersTableListsEveryTargetInDependencyOrder() throws {
        let rows = try layerRows()
        let manifest = try manifestGraph()
        var rowOf: [String: Int] = [:]
        for (index, names) in rows.enumerated() {
            for name in names {
                XCTAssertNil(rowOf[name], "\(name) is in two rows of docs/ARCHITECTURE.md's Layers table")
                rowOf[name] = index
            }
        }
        XCTAssertEqual(Set(rowOf.keys).subtracting(manifest.keys).sorted(), [], "in the Layers table, but not targets in Package.swift")
        XCTAssertEqual(Set(manifest.keys).subtracting(rowOf.keys).sorted(), [], "targets missing from docs/ARCHITECTURE.md's Layers table")
        for (target, dependencies) in manifest {
            guard let row = rowOf[target] else { continue }
            for dependency in dependencies.targets where (rowOf[dependency] ?? 0) > row {
                XCTFail("\(target) depends on \(dependency), which the Layers table puts below it")
            }
        }
    }

    /// The module host process (`rpcd-module-host`) runs a module and its end of the link, none of rpcd's
    /// serving side: it never links the router, the envelope codec, the listeners or the supervisor.
    func testTheModuleHostLinksNoRouter() throws {
        let manifest = try manifestGraph()
        var linked: Set<String> = []
        var waiting = ["rpcd-module-host"]
        while let target = waiting.popLast() {
            guard linked.insert(target).inserted else { continue }
            waiting += manifest[target]?.targets ?? []
        }
        XCTAssertTrue(linked.contains("RPCModuleHost"))
        XCTAssertEqual(linked.intersection(["RPCCore", "JSONRPC", "RPCServer", "RPCModules"]).sorted(), [], "rpcd-module-host links rpcd's serving side")
    }

    /// The names in backticks in the first cell of each row of the table under "## Layers".
    private func layerRows() throws -> [[String]] {
        let text = try String(contentsOf: Self.repository.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        guard let heading = text.range(of: "\n## Layers\n") else {
            XCTFail("docs/ARCHITECTURE.md has no \"## Layers\" section")
            return []
        }
        let end = text.range(of: "\n## ", range: heading.upperBound..<text.endIndex)?.lowerBound ?? text.endIndex
        return text[heading.upperBound..<end].split(separator: "\n").filter { $0.hasPrefix("| `") }.map { line in
            let cell = line.dropFirst().prefix { $0 != "|" }
            return cell.matches(of: /`([^`]+)`/).map { String($0.1) }
        }
    }

    /// The code block after "What each target depends on": `TARGET  DEP, DEP [PRODUCT, PRODUCT]`, or `—`.
    private func documentedGraph() throws -> [String: Dependencies] {
        let text = try String(contentsOf: Self.repository.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        guard let heading = text.range(of: "What each target depends on"),
            let open = text.range(of: "```\n", range: heading.upperBound..<text.endIndex),
            let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        else {
            XCTFail("docs/ARCHITECTURE.md has no graph block after \"What each target depends on\"")
            return [:]
        }
        var graph: [String: Dependencies] = [:]
        for line in text[open.upperBound..<close.lowerBound].split(separator: "\n") {
            let name = String(line.prefix { $0 != " " })
            var rest = line.dropFirst(name.count).trimmingCharacters(in: .whitespaces)
            var products: Set<String> = []
            if let bracket = rest.firstIndex(of: "["), rest.hasSuffix("]") {
                products = Self.list(rest[rest.index(after: bracket)..<rest.index(before: rest.endIndex)])
                rest = String(rest[..<bracket])
            }
            XCTAssertNil(graph[name], "\(name) has two rows")
            graph[name] = Dependencies(targets: rest.trimmingCharacters(in: .whitespaces) == "—" ? [] : Self.list(rest), products: products)
        }
        return graph
    }

    private static func list(_ text: some StringProtocol) -> Set<String> {
        Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    }

    private func manifestGraph() throws -> [String: Dependencies] {
        try PackageManifest.graph(PackageManifest.dump())
    }
}
