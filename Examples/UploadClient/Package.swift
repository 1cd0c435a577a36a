// swift-tools-version:6.0
import PackageDescription

// Uploads a file to `sharepipe daemon --listen` the way an iOS share extension does: a URLSession upload task from
// the file (a raw body, never multipart built in memory), the type in `Sharepipe-Type`, the name in
// `Content-Disposition`.
let package = Package(
    name: "UploadClient",
    targets: [
        .executableTarget(name: "UploadClient"),
    ],
    swiftLanguageModes: [.v6]
)
