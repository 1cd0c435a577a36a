// swift-tools-version:6.0
import PackageDescription

// A processor written outside sharepipe, tested with the lifecycle harness of `SharepipeTesting`.
let package = Package(
    name: "ProcessorExample",
    products: [
        .library(name: "CatalogueProcessor", targets: ["CatalogueProcessor"]),
    ],
    dependencies: [
        .package(name: "sharepipe", path: "../.."),
    ],
    targets: [
        .target(
            name: "CatalogueProcessor",
            dependencies: [.product(name: "SharepipeCore", package: "sharepipe")]
        ),
        // The example of sharepipe's docs/library.md, exactly as the page shows it (LibraryDocumentationTests checks
        // that the two are the same): building this package compiles it. It is never run.
        .executableTarget(
            name: "LibraryExample",
            dependencies: [
                .product(name: "SharepipeCore", package: "sharepipe"),
                .product(name: "SharepipeScenario", package: "sharepipe"),
            ]
        ),
        .testTarget(
            name: "CatalogueProcessorTests",
            dependencies: [
                "CatalogueProcessor",
                .product(name: "SharepipeCore", package: "sharepipe"),
                .product(name: "SharepipeTesting", package: "sharepipe"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
