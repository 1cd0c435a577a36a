// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "sharepipe",
    products: [
        .library(name: "SharepipeCore", targets: ["SharepipeCore"]),
        .library(name: "SharepipeTesting", targets: ["SharepipeTesting"]),
        // issue 28: scripted item providers and the scenario model, for tests and examples (not in SharepipeCore)
        .library(name: "SharepipeScenario", targets: ["SharepipeScenario"]),
        // issue 20: Apple's share-extension API on Linux
        .library(name: "SharepipeExtensionKit", targets: ["SharepipeExtensionKit"]),
        // issue 32: Apple's module names over the kit, so an extension's imports compile unchanged on Linux
        .library(name: "UniformTypeIdentifiers", targets: ["UniformTypeIdentifiers"]),
        .library(name: "MobileCoreServices", targets: ["MobileCoreServices"]),
        .executable(name: "sharepipe", targets: ["sharepipe"]),
    ],
    targets: [
        .systemLibrary(name: "CMagic", pkgConfig: nil, providers: [.apt(["libmagic-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: nil, providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: nil, providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPQ", pkgConfig: nil, providers: [.apt(["libpq-dev"])]),
        // issue 19: HTTP ingest over libmicrohttpd
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: nil, providers: [.apt(["libmicrohttpd-dev", "libgnutls28-dev"])]
        ),
        // issue 33: webhook delivery over libcurl
        .systemLibrary(name: "CCurl", pkgConfig: nil, providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "CSharepipeShims"),
        // issue 28: the floors, lowest first; a floor imports only the floors below it (scripts/check-layers.sh).
        .target(name: "SharepipeSystem", dependencies: ["CMagic", "CCrypto", "CSharepipeShims"]),
        .target(name: "SharepipeLedger", dependencies: ["SharepipeSystem", "CSQLite", "CPQ"]),
        .target(name: "SharepipeSpool", dependencies: ["SharepipeLedger", "SharepipeSystem"]),
        .target(
            name: "SharepipeIngest",
            dependencies: ["SharepipeSpool", "SharepipeLedger", "SharepipeSystem", "CMicroHTTPD"]
        ),
        .target(
            name: "SharepipeDaemon",
            // issue 33: webhooks over libcurl, signed with libcrypto's HMAC
            dependencies: ["SharepipeIngest", "SharepipeSpool", "SharepipeLedger", "SharepipeSystem", "CCurl", "CCrypto"]
        ),
        .target(
            name: "SharepipeCore",
            dependencies: ["SharepipeDaemon", "SharepipeIngest", "SharepipeSpool", "SharepipeLedger", "SharepipeSystem"]
        ),
        // Scripted providers for `share --scenario`, `matrix` and the harnesses: not in the production library.
        .target(name: "SharepipeScenario", dependencies: ["SharepipeIngest", "SharepipeLedger", "SharepipeSystem"]),
        .target(
            name: "SharepipeTesting",
            dependencies: ["SharepipeCore", "SharepipeScenario", "SharepipeExtensionKit"]
        ),
        // --- issue 20: the extension kit and its tests ---
        .target(name: "SharepipeExtensionKit", dependencies: ["SharepipeCore"]),
        .target(name: "UniformTypeIdentifiers", dependencies: ["SharepipeExtensionKit"]),
        .target(name: "MobileCoreServices", dependencies: ["SharepipeExtensionKit"]),
        .testTarget(
            name: "SharepipeExtensionKitTests",
            dependencies: [
                "SharepipeExtensionKit", "SharepipeTesting", "SharepipeCore", "SharepipeScenario", "sharepipe",
                "UniformTypeIdentifiers", "MobileCoreServices",
            ]
        ),
        // --- end issue 20 ---
        .executableTarget(name: "sharepipe", dependencies: ["SharepipeCore", "SharepipeScenario"]),
        .executableTarget(name: "LoaderBenchmark", dependencies: ["SharepipeCore"], path: "Benchmarks/LoaderBenchmark"),
        .executableTarget(name: "DrainBenchmark", dependencies: ["SharepipeCore"], path: "Benchmarks/DrainBenchmark"),
        .executableTarget(name: "LatencyBenchmark", path: "Benchmarks/LatencyBenchmark"),
        .testTarget(
            name: "SharepipeCoreTests", dependencies: ["SharepipeCore", "SharepipeScenario", "SharepipeTesting"]
        ),
        .testTarget(
            name: "SharepipeTestingTests", dependencies: ["SharepipeTesting", "SharepipeCore", "SharepipeScenario"]
        ),
        .testTarget(
            name: "SharepipeEndToEndTests",
            dependencies: ["sharepipe", "SharepipeCore", "SharepipeScenario"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
