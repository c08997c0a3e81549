import Foundation
import XCTest

/// Every type, target and source file docs/ARCHITECTURE.md names in backticks exists (in Sources/, or in Tests/
/// for the tests it names), so that a rename or a
/// removal fails here instead of leaving the map pointing at nothing.
///
/// What counts as a name: a backticked word that starts with a capital and has a lower-case letter (`RPCRouter`,
/// `@RPCInterface`, `RPCMethod<Target, Input>`), a target's name, a dotted path from one (`RPCRouter.events`,
/// whose members must be declared too) or a Swift file (`ConsoleAssets.swift`). Settings (`Timeout=`), methods on
/// the wire (`rpc.cancel`), C names (`SO_PEERCRED`) and commands are not names of the sources and are skipped.
final class ArchitectureNamesTests: XCTestCase {
    /// Names of other packages the page explains rpcd against, with the package they come from.
    static let elsewhere: [String: String] = [
        "ByteBuffer": "swift-nio", "ByteToMessageHandler": "swift-nio", "Channel": "swift-nio",
        "MultiThreadedEventLoopGroup": "swift-nio", "NIOSSLServerHandler": "swift-nio-ssl",
        "WebSocketFrameDecoder": "swift-nio", "WebSocketFrameEncoder": "swift-nio", "WebSocketFrame": "swift-nio",
        "NIOWebSocketServerUpgrader": "swift-nio", "NIOAny": "swift-nio",
        "Service": "swift-service-lifecycle", "ServiceGroup": "swift-service-lifecycle",
        "HTTP2FramePayloadToHTTP1ServerCodec": "swift-nio-http2",
        "AsyncSequence": "the standard library", "Distributed": "the toolchain", "Resolvable": "the toolchain",
    ]

    func testEveryNameInBackticksExistsInTheSources() throws {
        let text = try String(
            contentsOf: PackageManifest.repository.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let sources = try Self.sources()
        let manifest = try XCTUnwrap(PackageManifest.dump()["targets"] as? [[String: Any]])
        let targets = Set(manifest.compactMap { $0["name"] as? String })
        for name in Self.namesInBackticks(text) {
            for problem in Self.problems(with: name, sources: sources, targets: targets) {
                XCTFail("docs/ARCHITECTURE.md names `\(name)`: \(problem)")
            }
        }
    }

    /// What the page's backticks hold, each once, in order.
    static func namesInBackticks(_ text: String) -> [String] {
        var seen: Set<String> = [], names: [String] = []
        // Code blocks are drawings and the dependency graph (checked by ArchitectureGraphTests), not names.
        let prose = text.split(separator: "```", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 0 }.map(\.element).joined(separator: "\n")
        for match in prose.matches(of: /`([^`\n]+)`/) where seen.insert(String(match.1)).inserted {
            names.append(String(match.1))
        }
        return names
    }

    /// Why `name` names nothing in the sources (empty when it does, or is not a name of the sources).
    static func problems(with name: String, sources: Sources, targets: Set<String>) -> [String] {
        if name.hasSuffix(".swift") {
            return sources.files.contains(String(name.split(separator: "/").last!)) ? [] : ["no such file in Sources/ or Tests/"]
        }
        var path = name.hasPrefix("@") ? String(name.dropFirst()) : name
        if let generic = path.firstIndex(of: "<") { path = String(path[..<generic]) }
        let components = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard components.allSatisfy({ $0.wholeMatch(of: /[A-Za-z][A-Za-z0-9]*/) != nil }) else { return [] }
        let head = components[0]
        if targets.contains(head) { return [] }
        guard head.first!.isUppercase, head.contains(where: \.isLowercase) else { return [] }
        if Self.elsewhere[head] != nil { return [] }
        var problems: [String] = []
        for (index, component) in components.enumerated() {
            let declared = index == 0 || component.first!.isUppercase
                ? sources.types.contains(component) : sources.members.contains(component)
            if !declared { problems.append("no declaration of \(component) in Sources/ or Tests/") }
        }
        return problems
    }

    /// The names Sources/ and Tests/ declare: types (and macros, type aliases), members, files.
    struct Sources {
        var types: Set<String> = []
        var members: Set<String> = []
        var files: Set<String> = []
    }

    static func sources() throws -> Sources {
        var sources = Sources()
        let files = ["Sources", "Tests"].compactMap {
            FileManager.default.enumerator(at: PackageManifest.repository.appendingPathComponent($0), includingPropertiesForKeys: nil)
        }.joined()
        for case let file as URL in files where file.pathExtension == "swift" {
            sources.files.insert(file.lastPathComponent)
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: /\b(?:struct|class|enum|protocol|actor|typealias|macro|associatedtype)\s+(\w+)/) {
                sources.types.insert(String(match.1))
            }
            for match in text.matches(of: /\b(?:func|var|let|case)\s+`?(\w+)/) { sources.members.insert(String(match.1)) }
        }
        return sources
    }

    /// The check itself fails on what does not exist, and passes over what is not a name.
    func testAMissingNameFails() throws {
        let sources = Sources(types: ["RPCRouter"], members: ["events"], files: ["RPCRouter.swift"])
        let targets: Set<String> = ["RPCCore", "rpcd"]
        for present in ["RPCRouter", "@RPCRouter", "RPCRouter.events", "RPCRouter<T>", "RPCCore", "rpcd", "RPCRouter.swift",
                        "rpc.cancel", "Timeout=", "SO_PEERCRED", "make bench", "ByteBuffer"] {
            XCTAssertEqual(problems(with: present, sources: sources, targets: targets), [], present)
        }
        for missing in ["PeerConnectionCounts", "RPCRouter.gone", "Gone.swift"] {
            XCTAssertNotEqual(problems(with: missing, sources: sources, targets: targets), [], missing)
        }
    }

    private func problems(with name: String, sources: Sources, targets: Set<String>) -> [String] {
        Self.problems(with: name, sources: sources, targets: targets)
    }
}
