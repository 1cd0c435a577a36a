import Foundation
import Testing

/// docs/library.md's example is the source of the `LibraryExample` target of `Examples/ProcessorExample`, which CI
/// builds against this checkout (`.ci/run`): while the page shows exactly that file, the example on the page compiles.
@Suite struct LibraryDocumentationTests {
    /// The checkout's root, three folders up from this file.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func read(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    /// The contents of the page's ```swift blocks, in order.
    static func swiftBlocks(of page: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if let lines = current, line == "```" {
                blocks.append(lines.map { $0 + "\n" }.joined())
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test func thePageShowsTheCodeTheExamplePackageCompiles() throws {
        let blocks = Self.swiftBlocks(of: try Self.read("docs/library.md"))
        #expect(blocks.count == 1)
        #expect(blocks.joined() == (try Self.read("Examples/ProcessorExample/Sources/LibraryExample/main.swift")))
        let manifest = try Self.read("Examples/ProcessorExample/Package.swift")
        #expect(manifest.contains("name: \"LibraryExample\""))
    }
}
