// swift-tools-version:6.0
import PackageDescription

// A share extension's ingest code, written against Apple's API as for iOS, compiled and tested on Linux with
// sharepipe's extension kit and its extension harness.
let package = Package(
    name: "ShareExtension",
    products: [
        .library(name: "ShareIngest", targets: ["ShareIngest"]),
    ],
    dependencies: [
        .package(name: "sharepipe", path: "../.."),
    ],
    targets: [
        .target(
            name: "ShareIngest",
            dependencies: [
                .product(name: "UniformTypeIdentifiers", package: "sharepipe", condition: .when(platforms: [.linux])),
            ]
        ),
        .testTarget(
            name: "ShareIngestTests",
            dependencies: [
                "ShareIngest",
                .product(name: "SharepipeExtensionKit", package: "sharepipe"),
                .product(name: "SharepipeTesting", package: "sharepipe"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
