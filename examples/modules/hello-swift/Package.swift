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
        // rpcd-dev's Swift SDK (`pkg-config --variable=swiftsdkdir rpcd-module`); in a checkout of rpcd,
        // its swift-sdk folder. Nothing else: the package builds with no network.
        .package(path: "/usr/share/rpcd/swift-sdk")
    ],
    targets: [
        .target(name: "Hello", dependencies: [.product(name: "RPCModuleSDK", package: "swift-sdk")])
    ]
)
