// swift-tools-version:6.1
//
// rpcd's Swift module SDK as a package of its own: what a Swift module's package depends on. It depends on no
// other package, so a module builds against it with no network and resolves nothing else (docs/MODULES.md,
// "A Swift module of your own"). rpcd-dev installs it as /usr/share/rpcd/swift-sdk (`pkg-config
// --variable=swiftsdkdir rpcd-module`); in a checkout it is this folder.
//
// Its targets are rpcd's own, the same files, not copies: in the repository each folder of Sources/ is a
// symbolic link to the target of the same name in the repository's Sources/ (a package cannot name a path
// outside its own folder, and rpcd's Package.swift keeps its targets where they are), and `make install`
// copies the files they point to. Only RPCModuleSDK and what it imports, with the dependencies rpcd's
// Package.swift gives them (ArchitectureTests holds this list to it): no SwiftNIO, and no swift-syntax, so no
// @RPCInterface macro (RPCMacros' compiler plugin is built from swift-syntax's source); RPCInterface, which
// the SDK brings along, has the run-time side of declared interfaces.
import PackageDescription

let package = Package(
    name: "rpcd-swift-sdk",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RPCModuleSDK", targets: ["RPCModuleSDK"])
    ],
    targets: [
        .target(name: "RPCJSON"),
        .target(name: "RPCProtocol", dependencies: ["RPCJSON"]),
        .target(name: "RPCBinding", dependencies: ["RPCJSON", "RPCProtocol"]),
        .target(name: "RPCInterface", dependencies: ["RPCBinding", "RPCJSON", "RPCProtocol"]),
        .target(name: "CRPCDModule"),
        .target(
            name: "RPCModuleSDK", dependencies: ["CRPCDModule", "RPCJSON", "RPCProtocol", "RPCBinding", "RPCInterface"]),
    ]
)

// As in rpcd's Package.swift, which compiles the same files: imports are `internal` unless a file says `package
// import` or `public import`.
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("InternalImportsByDefault")]
}
