import Foundation
@testable import SharepipeExtensionKit
import Testing

/// The patterns real share and action extensions use to read what they were given (learned from open-source
/// extensions, see docs/extension-kit.md), each as iOS behaves.
@Suite(.timeLimit(.minutes(5)))
struct RealExtensionPatternTests {
    @Test func tryAwaitLoadItemOfTextAskedAsPublicTextGivesAString() async throws {
        let text = "Shared from Notes: ünïcödé"
        let provider = dataProvider("public.plain-text", Data(text.utf8))
        let item = try await provider.loadItem(forTypeIdentifier: "public.text")
        // Real code writes `item as? String`; through `Any` the cast is the same and does not warn on Linux.
        #expect((item as Any) as? String == text)
        #expect((item as Any) as? NSString == text as NSString)
    }

    @Test func tryAwaitLoadItemOfAURLGivesAURL() async throws {
        let bookmark = try Data(contentsOf: fixture("scenarios/data/article-url.bplist"))
        let provider = dataProvider("public.url", bookmark)
        let item = try await provider.loadItem(forTypeIdentifier: "public.url")
        let url = (item as Any) as? URL
        #expect(url?.absoluteString == "https://example.com/articles/share-extensions")
    }

    @Test func anImageFileFromLoadItemIsReadLaterOnTheMainQueue() async throws {
        let photo = fixture("files/photo.jpg")
        var provider: NSItemProvider? = fileProvider("public.jpeg", photo)
        let handed = Box<URL?>(nil)
        provider?.loadItem(forTypeIdentifier: "public.image", options: nil) { item, _ in
            handed.update { $0 = (item as Any) as? URL }
        }
        #expect(await eventually { provider?.loadRecords.first?.handlerReturned == true })
        let url = try #require(handed.value)
        // As real code does: the handler hands the URL to the main queue, which reads it once the handler returned.
        let bytes = await MainActor.run { FileManager.default.contents(atPath: url.path) }
        #expect(bytes == FileManager.default.contents(atPath: photo.path))
        let later = try await provider?.loadItem(forTypeIdentifier: "public.jpeg")
        let laterURL = try #require((later as Any) as? URL)
        let read = await Task.detached { FileManager.default.contents(atPath: laterURL.path) }.value
        #expect(read == FileManager.default.contents(atPath: photo.path))
        provider = nil
        #expect(await eventually { !FileManager.default.fileExists(atPath: url.path) }, "kept until the provider goes")
        #expect(!FileManager.default.fileExists(atPath: laterURL.path))
    }
}
