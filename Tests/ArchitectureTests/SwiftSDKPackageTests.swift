import Foundation
import XCTest

/// swift-sdk/ is the Swift module SDK as a package of its own (what rpcd-dev installs and a module's
/// Package.swift names by path): RPCModuleSDK and the targets it needs, as rpcd's Package.swift has them, each
/// the same files through a symbolic link, and no other package. This test keeps the two manifests from
/// drifting apart; examples/modules' test builds a module against it.
final class SwiftSDKPackageTests: XCTestCase {
    private static let sdk = PackageManifest.repository.appendingPathComponent("swift-sdk")

    func testTheSDKIsRPCModuleSDKWithWhatItNeedsAndNoOtherPackage() throws {
        let rpcd = try PackageManifest.graph(PackageManifest.dump())
        let manifest = try PackageManifest.dump(package: Self.sdk)
        let sdk = try PackageManifest.graph(manifest)

        // RPCModuleSDK and every target it reaches in rpcd's manifest, with the same dependencies.
        var needed: Set<String> = [], next = ["RPCModuleSDK"]
        while let target = next.popLast() {
            guard needed.insert(target).inserted else { continue }
            let dependencies = try XCTUnwrap(rpcd[target], "\(target) is not a target of rpcd's Package.swift")
            XCTAssertEqual(dependencies.products, [], "\(target) needs another package's product, which the SDK cannot carry")
            next += dependencies.targets
        }
        XCTAssertEqual(Set(sdk.keys), needed, "swift-sdk/Package.swift's targets")
        for target in needed {
            XCTAssertEqual(sdk[target], rpcd[target], "swift-sdk/Package.swift's dependencies of \(target)")
        }
        XCTAssertEqual((manifest["dependencies"] as? [Any])?.count, 0, "the SDK depends on no package")
        let products = try XCTUnwrap(manifest["products"] as? [[String: Any]])
        XCTAssertEqual(products.map { $0["name"] as? String }, ["RPCModuleSDK"])

        // Each target's folder links to rpcd's, so both packages compile the same files.
        let sources = Self.sdk.appendingPathComponent("Sources")
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: sources.path)), needed)
        for target in needed {
            let link = try FileManager.default.destinationOfSymbolicLink(atPath: sources.appendingPathComponent(target).path)
            XCTAssertEqual(link, "../../Sources/\(target)", "swift-sdk/Sources/\(target)")
        }
    }
}
