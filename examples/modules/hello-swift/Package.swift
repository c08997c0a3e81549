// swift-tools-version:6.1
// An rpcd module written in Swift, built outside the rpcd source tree.
import PackageDescription

let package = Package(
    name: "hello",
    platforms: [.macOS(.v15)],
    products: [
        // libhello.so: what rpcd loads (Module=hello finds libhello.so in the module directory).
        .library(name: "hello", type: .dynamic, targets: ["Hello"])
    ],
    dependencies: [
        // The rpcd sources, for the SDK. A released module would use the rpcd repository's URL instead.
        .package(name: "rpcd", path: "../../..")
    ],
    targets: [
        .target(name: "Hello", dependencies: [.product(name: "RPCModuleSDK", package: "rpcd")])
    ]
)
