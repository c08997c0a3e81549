// swift-tools-version:6.1
//
// The targets, what each is for and the layers they form: docs/ARCHITECTURE.md, "Layers", the one list (a target
// depends only on targets in its row or above). ArchitectureTests holds that list, and the graph below it, to
// this manifest, and this manifest to what the sources import.
import CompilerPluginSupport
import PackageDescription

/// A plugin module's library names itself (DT_SONAME): without one the linker names the library's base
/// symbol version after its output path, the build folder included, and two builds of one source in
/// different folders differ (`make deb-repro`). rpcd loads modules by path, so the name is for tools only.
func moduleLinkerSettings(_ product: String) -> [LinkerSetting] {
    [.unsafeFlags(["-Xlinker", "-soname=lib\(product).so"])]
}

let package = Package(
    name: "rpcd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "rpcd", targets: ["rpcd"]),
        .executable(name: "rpcctl", targets: ["rpcctl"]),
        .library(name: "RPCClient", targets: ["RPCClient"]),
        .library(name: "RPCModuleSDK", targets: ["RPCModuleSDK"]),
        // Declaring a service once, as a Swift protocol, for modules and clients alike (docs/CLIENT.md).
        .library(name: "RPCMacros", targets: ["RPCMacros"]),
        .library(name: "RPCExampleInterfaces", targets: ["RPCExampleInterfaces"]),
        // Example plugin modules, loaded by rpcd with dlopen (libecho.so, libcalc.so, ...).
        .library(name: "echo", type: .dynamic, targets: ["EchoModule"]),
        .library(name: "calc", type: .dynamic, targets: ["CalcModule"]),
        .library(name: "kv", type: .dynamic, targets: ["KVModule"]),
        .library(name: "sysinfo", type: .dynamic, targets: ["SysinfoModule"]),
        // A module that crashes, hangs and leaks on request, for the fault isolation tests; never installed.
        .library(name: "faulty", type: .dynamic, targets: ["FaultyModule"]),
        .library(name: "trapping", type: .dynamic, targets: ["TrappingModule"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Only for the @RPCInterface compiler plugin: rpcd's own targets never depend on it.
        .package(url: "https://github.com/swiftlang/swift-syntax.git", from: "603.0.1"),
        // Only for the macros' expansion tests (RPCMacrosPluginTests).
        .package(url: "https://github.com/pointfreeco/swift-macro-testing.git", from: "0.7.0"),
    ],
    targets: [
        .target(name: "RPCJSON"),
        .target(name: "RPCProtocol", dependencies: ["RPCJSON"]),
        .target(name: "RPCLogging", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(
            name: "RPCMetrics",
            dependencies: [
                "RPCProtocol",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(name: "RPCBinding", dependencies: ["RPCJSON", "RPCProtocol"]),
        .target(name: "RPCDNSSD", dependencies: ["RPCProtocol"]),
        .target(
            name: "RPCWire",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        .target(
            name: "JSONRPC",
            dependencies: ["RPCJSON", "RPCProtocol", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .target(
            name: "RPCCore",
            dependencies: [
                "RPCJSON", "RPCProtocol", "RPCLogging", "RPCMetrics", "RPCBinding", "JSONRPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RPCConfig",
            dependencies: ["RPCDNSSD", "RPCProtocol"]
        ),
        .target(
            name: "RPCServer",
            dependencies: ["RPCBinding", "RPCTLS", "RPCMetrics",
                "RPCWire", "JSONRPC", "RPCCore", "RPCJSON", "RPCProtocol", "RPCLogging",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // TLS for listeners and clients (swift-nio-ssl): contexts from PEM files, re-read on reload, and the
        // identities a verified client certificate carries.
        .target(
            name: "RPCTLS",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(name: "CRPCDModule"),
        .target(name: "RPCInterface", dependencies: ["RPCBinding", "RPCJSON", "RPCProtocol"]),
        .macro(
            name: "RPCMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "RPCMacros", dependencies: ["RPCInterface", "RPCMacrosPlugin"]),
        .target(
            name: "RPCModuleSDK", dependencies: ["CRPCDModule", "RPCJSON", "RPCProtocol", "RPCBinding", "RPCInterface"]),
        .target(name: "RPCExampleInterfaces", dependencies: ["RPCMacros"], path: "Sources/Modules/Interfaces"),
        .target(name: "EchoModule", dependencies: ["RPCModuleSDK"], path: "Sources/Modules/Echo",
                linkerSettings: moduleLinkerSettings("echo")),
        .target(name: "CalcModule", dependencies: ["RPCModuleSDK", "RPCExampleInterfaces"], path: "Sources/Modules/Calc",
                linkerSettings: moduleLinkerSettings("calc")),
        .target(name: "KVModule", dependencies: ["RPCModuleSDK", "RPCExampleInterfaces"], path: "Sources/Modules/KV",
                linkerSettings: moduleLinkerSettings("kv")),
        .target(name: "SysinfoModule", dependencies: ["CRPCDModule"], path: "Sources/Modules/Sysinfo",
                linkerSettings: moduleLinkerSettings("sysinfo")),
        .target(name: "FaultyModule", dependencies: ["CRPCDModule"], path: "Tests/Modules/Faulty",
                linkerSettings: moduleLinkerSettings("faulty")),
        .target(name: "TrappingModule", dependencies: ["RPCModuleSDK"], path: "Tests/Modules/Trapping",
                linkerSettings: moduleLinkerSettings("trapping")),
        .target(name: "CRPCDHostSupport"),
        .target(
            name: "RPCModuleLink",
            dependencies: ["RPCBinding", "RPCJSON", "RPCProtocol", "RPCWire", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .target(
            name: "RPCModuleHost",
            dependencies: ["RPCBinding", "RPCModuleLink",
                "CRPCDModule", "CRPCDHostSupport", "RPCConfig", "RPCJSON", "RPCProtocol", "RPCLogging",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RPCModules",
            dependencies: ["RPCBinding", "RPCModuleHost", "RPCModuleLink",
                "CRPCDHostSupport", "RPCCore", "RPCConfig", "RPCJSON", "RPCProtocol",
                "RPCLogging",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .systemLibrary(
            name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .target(
            name: "RPCSystemd",
            dependencies: [
                "CSystemd", "RPCLogging",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "RPCClient",
            dependencies: [
                "RPCWire", "RPCJSON", "RPCProtocol", "RPCTLS", "RPCBinding", "RPCInterface", "RPCLogging",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // A client transport straight to a router (no socket): for rpcd's tests without processes or ports. Not a
        // product: it takes an `RPCRouter`, which only rpcd's own targets can build (RPCCore is internal), so
        // its API is `package`. Its own target so that RPCClient does not link RPCCore.
        .target(
            name: "RPCClientInProcess",
            dependencies: [
                "RPCClient", "RPCCore", "JSONRPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "RPCClientTools",
            dependencies: [
                "RPCClient", "RPCWire", "RPCJSON", "RPCProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .systemLibrary(name: "CAvahi", pkgConfig: "avahi-client", providers: [.apt(["libavahi-client-dev"])]),
        .target(
            name: "RPCAvahi",
            dependencies: [
                "CAvahi", "RPCDNSSD", "RPCLogging",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .systemLibrary(name: "CLDNS", pkgConfig: "ldns", providers: [.apt(["libldns-dev"])]),
        .target(
            name: "RPCWideArea",
            dependencies: ["CLDNS", "RPCDNSSD", "RPCLogging", .product(name: "Logging", package: "swift-log")]
        ),
        .target(name: "RPCDiscovery", dependencies: ["RPCAvahi", "RPCWideArea", "RPCDNSSD", "RPCProtocol"]),
        // The daemon assembled (its ServiceGroup: server, reload, watchdog, DNS-SD advertising, status): everything
        // rpcd's main starts, as a library so that what it decides is tested without a process.
        .target(
            name: "RPCDaemon",
            dependencies: [
                "RPCServer", "RPCConsole", "RPCConfig", "RPCCore", "RPCModules", "RPCModuleHost", "RPCSystemd", "RPCAvahi", "RPCWideArea",
                "RPCDNSSD", "RPCProtocol", "RPCLogging", "RPCMetrics", "JSONRPC", "RPCTLS", "RPCJSON",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "rpcd",
            dependencies: [
                "RPCDaemon", "RPCServer", "RPCConfig", "RPCCore", "RPCModules", "RPCModuleHost", "RPCSystemd", "RPCWideArea", "RPCProtocol",
                "RPCLogging", "RPCTLS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The web console (console/, embedded by scripts/embed-console.py into ConsoleAssets.swift).
        .target(
            name: "RPCConsole",
            dependencies: ["RPCServer", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")]
        ),
        // Runs one handler's module in a process of its own, for rpcd (Isolation=process): small on purpose.
        .executableTarget(name: "rpcd-module-host", dependencies: ["RPCModuleHost"], path: "Sources/rpcd-module-host"),
        .executableTarget(
            name: "rpcctl",
            dependencies: [
                "RPCClient", "RPCClientTools", "RPCJSON", "RPCLogging", "RPCProtocol", "RPCWire", "RPCDiscovery", "RPCDNSSD",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .executableTarget(
            name: "rpcd-echo-reference",
            dependencies: ["RPCProtocol", 
                "RPCWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Sources/FrameEchoReference"
        ),
        // The hot paths of one call, alone, for bench/micro.sh's instruction and allocation counts.
        .executableTarget(
            name: "rpcd-microbench",
            dependencies: [
                "JSONRPC", "RPCBinding", "RPCCore", "RPCInterface", "RPCJSON", "RPCLogging", "RPCMetrics", "RPCModuleHost",
                "RPCModules", "RPCProtocol", "RPCServer", "RPCWire",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "bench/micro"
        ),
        // An application on the client library, for the restart system test (Tests/SystemTests).
        .executableTarget(
            name: "rpcd-systemtest-client",
            dependencies: ["RPCClient", "RPCExampleInterfaces", "RPCJSON"],
            path: "Tests/SystemTests/SwiftClient"
        ),

        .testTarget(name: "RPCJSONTests", dependencies: ["RPCJSON"]),
        // Holds docs/ARCHITECTURE.md (its targets, graph and names) and the sources' imports to this manifest (through
        // `swift package dump-package`).
        .testTarget(name: "ArchitectureTests"),
        .testTarget(
            name: "RPCConsoleTests",
            dependencies: ["RPCConsole", "RPCServer", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")]
        ),
        .testTarget(name: "RPCProtocolTests", dependencies: ["RPCProtocol", "RPCJSON"]),
        .testTarget(name: "RPCLoggingTests", dependencies: ["RPCLogging"]),
        .testTarget(name: "RPCMetricsTests", dependencies: ["RPCMetrics", "RPCProtocol"]),
        .testTarget(name: "RPCBindingTests", dependencies: ["RPCBinding", "RPCProtocol", "RPCJSON"]),
        .testTarget(name: "RPCDNSSDTests", dependencies: ["RPCDNSSD"]),
        .testTarget(name: "RPCWideAreaTests", dependencies: ["RPCWideArea", "RPCDNSSD", "RPCTestSupport"]),
        .testTarget(name: "RPCDiscoveryTests", dependencies: ["RPCDiscovery", "RPCAvahi", "RPCDNSSD", "RPCProtocol"]),
        .testTarget(
            name: "RPCAvahiTests",
            dependencies: [
                "RPCAvahi", "CAvahi", "RPCDNSSD", "RPCTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "RPCWireTests",
            dependencies: [
                "RPCWire", "RPCTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "JSONRPCTests",
            dependencies: ["RPCProtocol", "JSONRPC", "RPCJSON", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .testTarget(
            name: "RPCCoreTests",
            dependencies: ["RPCProtocol", "RPCLogging", "RPCBinding", "RPCTestSupport",
                "RPCCore", "RPCServer", "JSONRPC", "RPCJSON",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "RPCConfigTests", dependencies: ["RPCConfig", "RPCDNSSD", "RPCProtocol"]),
        .testTarget(name: "RPCModuleSDKTests", dependencies: ["RPCModuleSDK", "CRPCDModule", "RPCJSON", "RPCTestSupport"]),
        // The macros' expansions and diagnostics, as text.
        .testTarget(
            name: "RPCMacrosPluginTests",
            dependencies: ["RPCMacrosPlugin", .product(name: "MacroTesting", package: "swift-macro-testing")]
        ),
        // One protocol, both sides: the macro's declarations, a module and a proxy from it, in-process.
        .testTarget(
            name: "RPCInterfaceTests",
            dependencies: ["RPCMacros", "RPCInterface", "RPCModuleSDK", "RPCCore", "RPCExampleInterfaces"]
        ),
        .testTarget(
            name: "RPCModuleLinkTests",
            dependencies: [
                "RPCModuleLink", "RPCBinding", "RPCJSON", "RPCProtocol", "RPCTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "RPCModuleHostTests",
            dependencies: ["RPCModuleHost", "RPCModuleLink", "RPCBinding", "RPCConfig", "RPCJSON",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "RPCModulesTests",
            dependencies: ["RPCProtocol", "RPCTestSupport", "CRPCDHostSupport",
                "RPCModules", "RPCBinding", "RPCModuleHost", "RPCModuleLink", "RPCCore", "RPCServer", "RPCConfig", "JSONRPC", "RPCJSON",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "RPCServerTests",
            dependencies: [
                "RPCServer", "RPCCore", "RPCMetrics", "RPCJSON", "JSONRPC", "RPCWire", "RPCProtocol", "RPCLogging", "RPCBinding",
                "RPCTestSupport",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "RPCSystemdTests",
            dependencies: [
                "RPCSystemd", "CSystemd", "RPCLogging", "RPCTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "RPCDaemonTests",
            dependencies: [
                "RPCDaemon", "RPCTestSupport", "RPCAvahi", "RPCConfig", "RPCCore", "RPCDNSSD", "RPCLogging", "RPCModules", "RPCModuleHost",
                "RPCProtocol", "RPCServer",
                "RPCSystemd", "JSONRPC",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "RPCTLSTests", dependencies: ["RPCTLS", "RPCTestSupport", .product(name: "NIOSSL", package: "swift-nio-ssl")]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["RPCProtocol", "RPCClient", "RPCClientTools", "RPCJSON", "RPCTestSupport"]
        ),
        // What several test targets share (a library, so that each can use it): a real rpcd process started from
        // one options value, a raw socket and the frames sent on it, an in-process JSON-RPC server, futures on an
        // EmbeddedEventLoop, waiting for a condition, a private CA made with openssl, a notifier that records.
        .target(
            name: "RPCTestSupport",
            dependencies: [
                "RPCClient", "RPCJSON", "RPCProtocol", "RPCSystemd", "RPCWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/RPCTestSupport"
        ),
        .testTarget(
            name: "RPCClientToolsTests",
            dependencies: [
                "RPCClientTools", "RPCClient", "RPCTestSupport", "RPCJSON",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "RPCClientTests",
            dependencies: ["RPCProtocol", "RPCClientInProcess", "RPCCore", "RPCServer", "JSONRPC", "RPCBinding",
                "RPCTestSupport",
                "RPCClient", "RPCJSON", "RPCWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
    ]
)

// libFuzzer harnesses (fuzz/README.md). They exist only when RPCD_FUZZ=1, because each is an executable whose
// `main` comes from libFuzzer (`-sanitize=fuzzer`): in an ordinary build they would not link. Keeping them in
// this manifest, rather than in a package of their own under fuzz/, lets them reach the internal targets
// (RPCWire, JSONRPC, RPCConfig, ...) without exporting those as library products nobody else needs.
if Context.environment["RPCD_FUZZ"] == "1" {
    let harnesses: [(name: String, dependencies: [Target.Dependency])] = [
        ("fuzz-frame", ["RPCWire", .product(name: "NIOCore", package: "swift-nio"),
                        .product(name: "NIOEmbedded", package: "swift-nio")]),
        ("fuzz-json", ["RPCJSON"]),
        ("fuzz-envelope", ["JSONRPC", "RPCJSON", .product(name: "NIOCore", package: "swift-nio")]),
        ("fuzz-params", ["RPCBinding", "RPCProtocol", "RPCJSON"]),
        ("fuzz-config", ["RPCConfig"]),
        ("fuzz-websocket", ["RPCWire", .product(name: "NIOCore", package: "swift-nio"),
                            .product(name: "NIOEmbedded", package: "swift-nio"),
                            .product(name: "NIOWebSocket", package: "swift-nio")]),
        ("fuzz-modulelink", ["RPCModuleLink", "RPCBinding", "RPCJSON", .product(name: "NIOCore", package: "swift-nio"),
                             .product(name: "NIOEmbedded", package: "swift-nio")]),
    ]
    package.targets.append(.target(name: "FuzzDriver", path: "fuzz/FuzzDriver"))
    for harness in harnesses {
        package.targets.append(
            .executableTarget(
                name: harness.name, dependencies: ["FuzzDriver"] + harness.dependencies, path: "fuzz/\(harness.name)"))
    }
}

// Imports are `internal` unless a file says otherwise (SE-0409, as grpc-swift 2 has it): a file writes `package
// import` or `public import` where its declarations' signatures need another module, so what a target exposes of
// its dependencies is said at the import, and the compiler checks it. Every Swift target, the fuzzers' too.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("InternalImportsByDefault")]
}
