// swift-tools-version:6.1
// A Swift app that calls rpcd's calc and kv (and the hello module) through typed proxies, built outside the
// rpcd source tree as an app developer would build it.
import PackageDescription

let package = Package(
    name: "swift-client",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The rpcd sources, for the client library and the interfaces: a checkout of rpcd, by path (the
        // project has no public repository address yet).
        .package(name: "rpcd", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "swift-client",
            dependencies: [
                // The client, and @RPCInterface for declaring an interface of the app's own (Hello below).
                .product(name: "RPCClient", package: "rpcd"),
                .product(name: "RPCMacros", package: "rpcd"),
                // calc's and kv's interfaces, exactly as the modules declare them.
                .product(name: "RPCExampleInterfaces", package: "rpcd"),
            ]
        )
    ]
)
