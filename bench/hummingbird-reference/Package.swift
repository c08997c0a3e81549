// swift-tools-version:6.1
// The bench's HTTP reference (bench/README.md): a minimal Hummingbird 2 server answering POST /rpc with the body
// rpcd answers rpcd.ping with. A package of its own so that rpcd never depends on Hummingbird; bench/run.sh builds it.
import PackageDescription

let package = Package(
    name: "hummingbird-reference",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdReference",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")]
        ),
    ]
)
